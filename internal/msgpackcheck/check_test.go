package msgpackcheck

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func encode(t testing.TB, v any) []byte {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCheck: every value msgpack encodes passes; the headers that crash the decoder, and
// truncated or invalid input, do not.
func TestCheck(t *testing.T) {
	for _, v := range []any{nil, true, 1, -1, 1 << 40, -1 << 40, 1.5, float32(2), "s", strings.Repeat("x", 70000),
		[]byte{1, 2}, []any{1, "a", []any{}}, map[string]any{"a": map[string]any{"b": []any{nil}}},
		map[int]string{1: "a"}, msgpack.RawMessage{0x90}} {
		if err := Check(encode(t, v), 10); err != nil {
			t.Errorf("%#v: %v", v, err)
		}
	}
	deep := append(bytes.Repeat([]byte{0x91}, 20), 0xc0)
	for name, b := range map[string][]byte{
		"array32 of 2^31":      {0xdd, 0x7f, 0xff, 0xff, 0xff, 0xc0},
		"map32 of 2^31":        {0xdf, 0x7f, 0xff, 0xff, 0xff},
		"array16 past the end": {0xdc, 0x00, 0x03, 0xc0, 0xc0},
		"str32 past the end":   {0xdb, 0x00, 0x00, 0x01, 0x00, 'a'},
		"too deep":             deep,
		"truncated":            {0x92, 0xc0},
		"never used":           {0xc1},
		"empty":                {},
	} {
		if err := Check(b, 10); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := Check(deep, 30); err != nil {
		t.Errorf("20 deep with a limit of 30: %v", err)
	}
}

// FuzzCheck: whatever Check accepts decodes without taking the process down, and every
// value that decodes re-encodes into something Check accepts.
func FuzzCheck(f *testing.F) {
	f.Add([]byte{0xdd, 0x7e, 0xb9, 0x15, 0x08, 0x38})
	f.Add([]byte{0x82, 0xa1, 'a', 0x01, 0xa1, 'b', 0x92, 0xc3, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0xd6, 0xff, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		if Check(b, 100) != nil {
			return
		}
		var v any
		if err := msgpack.Unmarshal(b, &v); err != nil {
			return
		}
		if err := Check(encode(t, v), 100); err != nil {
			t.Errorf("re-encoded %#v fails: %v", v, err)
		}
	})
}
