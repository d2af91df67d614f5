// Package msgpackjson decodes msgpack bytes of unknown shape (a job's payload, result or
// output) into values encoding/json can render, for the operator's views of a job.
package msgpackjson

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/headgate/headgate/internal/msgpackcheck"
)

// maxDepth bounds the nesting Decode accepts; deeper values are not shown decoded.
const maxDepth = 64

// Decode decodes b as exactly one msgpack value into maps with string keys, slices,
// strings, numbers, bools and nil; ok is false when b is not that. Bytes that are valid
// UTF-8 become strings, others hex. A value whose headers declare more elements than b
// holds, or that nests deeper than 64, is refused before decoding: decoding it would
// exhaust the process's memory or stack (see msgpackcheck).
func Decode(b []byte) (v any, ok bool) {
	if msgpackcheck.Check(b, maxDepth) != nil {
		return nil, false
	}
	r := bytes.NewReader(b)
	dec := msgpack.NewDecoder(r)
	// Maps of any key type (a payload may have integer keys), made JSON objects below.
	dec.SetMapDecoder(func(d *msgpack.Decoder) (any, error) { return d.DecodeUntypedMap() })
	if err := dec.Decode(&v); err != nil || r.Len() != 0 {
		return nil, false
	}
	return jsonable(v), true
}

// jsonable turns msgpack's decoded maps with non-string keys into JSON objects and byte
// strings into text or hex.
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonable(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = jsonable(e)
		}
		return x
	case []byte:
		if utf8.Valid(x) {
			return string(x)
		}
		return hex.EncodeToString(x)
	}
	return v
}
