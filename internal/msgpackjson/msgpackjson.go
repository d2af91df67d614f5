// Package msgpackjson decodes msgpack bytes of unknown shape (a job's payload, result or
// output) into values encoding/json can render, for the operator's views of a job, and
// encodes the JSON an operator gives as a payload into msgpack.
package msgpackjson

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
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

// Encode turns one JSON value into the msgpack a worker decodes into its args (payloads
// are msgpack.Marshal(args), with map keys sorted as the rqueue client writes them): an
// operator gives a payload as JSON, and stored as JSON text it would not decode. Whole
// numbers become msgpack integers (int64, or uint64 above it), so they decode into Go
// integer fields; other numbers become float64.
func Encode(js []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	v, err := fromJSON(v)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetSortMapKeys(true)
	enc.UseCompactInts(true) // as msgpack encodes a Go int
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// fromJSON replaces the json.Numbers of a decoded JSON value by int64, uint64 or float64.
func fromJSON(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return n, nil
		}
		if n, err := strconv.ParseUint(string(x), 10, 64); err == nil {
			return n, nil
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return nil, fmt.Errorf("number %s: %w", x, err)
		}
		return f, nil
	case map[string]any:
		for k, e := range x {
			var err error
			if x[k], err = fromJSON(e); err != nil {
				return nil, err
			}
		}
	case []any:
		for i, e := range x {
			var err error
			if x[i], err = fromJSON(e); err != nil {
				return nil, err
			}
		}
	}
	return v, nil
}
