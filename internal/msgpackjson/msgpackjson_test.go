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
