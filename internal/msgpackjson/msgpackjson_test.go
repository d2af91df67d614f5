package msgpackjson

import (
	"encoding/json"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func TestDecode(t *testing.T) {
	enc := func(v any) []byte {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want string // JSON of the decoded value; "" when Decode must refuse
	}{
		{"map", enc(map[string]any{"a": 1, "b": []any{"x", true}}), `{"a":1,"b":["x",true]}`},
		{"int keys", enc(map[int]string{1: "one"}), `{"1":"one"}`},
		{"binary", enc([]byte{0xff, 0x00}), `"ff00"`},
		{"text bytes", enc([]byte("hi")), `"hi"`},
		{"trailing bytes", append(enc(1), 0x01), ""},
		{"not msgpack", []byte{0xc1}, ""},
		{"huge array header", []byte{0xdd, 0xff, 0xff, 0xff, 0xff}, ""},
		{"too deep", append(repeat(0x91, 100), 0x01), ""},
	} {
		v, ok := Decode(tc.in)
		if tc.want == "" {
			if ok {
				t.Errorf("%s: Decode = %v, want refused", tc.name, v)
			}
			continue
		}
		got, err := json.Marshal(v)
		if !ok || err != nil || string(got) != tc.want {
			t.Errorf("%s: Decode = %s (ok %v, %v), want %s", tc.name, got, ok, err, tc.want)
		}
	}
}

func repeat(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

func TestEncode(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want: Decode's JSON of the encoding; "" when Encode must refuse
	}{
		{`{"b":[1,-2,1.5,"x",true,null],"a":{"k":18446744073709551615}}`, `{"a":{"k":18446744073709551615},"b":[1,-2,1.5,"x",true,null]}`},
		{`7`, `7`},
		{`"text"`, `"text"`},
		{`{`, ""},
		{`1 2`, ""},
		{``, ""},
	} {
		b, err := Encode([]byte(tc.in))
		if tc.want == "" {
			if err == nil {
				t.Errorf("Encode(%q) = %x, want an error", tc.in, b)
			}
			continue
		}
		if err != nil {
			t.Errorf("Encode(%q): %v", tc.in, err)
			continue
		}
		v, ok := Decode(b)
		got, err := json.Marshal(v)
		if !ok || err != nil || string(got) != tc.want {
			t.Errorf("Encode(%q) decodes to %s (ok %v, %v), want %s", tc.in, got, ok, err, tc.want)
		}
	}
	// Whole numbers are msgpack integers, so they decode into Go integer fields.
	b, err := Encode([]byte(`{"n":3}`))
	if err != nil {
		t.Fatal(err)
	}
	var args struct {
		N int `msgpack:"n"`
	}
	if err := msgpack.Unmarshal(b, &args); err != nil || args.N != 3 {
		t.Errorf("decoded into a struct: %+v, %v", args, err)
	}
}
