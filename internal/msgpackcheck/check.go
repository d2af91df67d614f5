// Package msgpackcheck checks the shape of a msgpack value before it is decoded.
//
// github.com/vmihailenco/msgpack/v5 (v5.4.1) allocates an array or map of the length its
// header declares before reading one element, and decodes nested values recursively: a
// 5-byte payload declaring 2^32 elements exhausts memory, and a payload nested millions
// deep exhausts the stack. Both kill the process, not just the call. Check refuses such
// payloads by walking their headers, without allocating per element.
package msgpackcheck

import "fmt"

// Check reports whether b starts with one well-formed msgpack value whose arrays and maps
// declare no more elements than b has bytes left (each element takes at least one) and
// nest at most maxDepth deep. Bytes after the value are not looked at, as Unmarshal does
// not read them.
func Check(b []byte, maxDepth int) error {
	pending := []int{1} // values still to read at each open level
	i := 0
	for len(pending) > 0 {
		top := len(pending) - 1
		if pending[top] == 0 {
			pending = pending[:top]
			continue
		}
		pending[top]--
		if i >= len(b) {
			return fmt.Errorf("msgpack: truncated at byte %d", i)
		}
		c := b[i]
		i++
		skip, items := 0, 0
		length := func(size int) (int, error) {
			if len(b)-i < size {
				return 0, fmt.Errorf("msgpack: truncated length at byte %d", i)
			}
			n := 0
			for _, x := range b[i : i+size] {
				n = n<<8 | int(x)
			}
			i += size
			return n, nil
		}
		var err error
		switch {
		case c <= 0x7f || c >= 0xe0: // fixint
		case c <= 0x8f:
			items = 2 * int(c&0x0f)
		case c <= 0x9f:
			items = int(c & 0x0f)
		case c <= 0xbf:
			skip = int(c & 0x1f)
		default:
			switch c {
			case 0xc0, 0xc2, 0xc3: // nil, false, true
			case 0xc4, 0xd9: // bin8, str8
				skip, err = length(1)
			case 0xc5, 0xda:
				skip, err = length(2)
			case 0xc6, 0xdb:
				skip, err = length(4)
			case 0xc7, 0xc8, 0xc9: // ext8/16/32: length, then the type byte
				skip, err = length(1 << (c - 0xc7))
				skip++
			case 0xca, 0xce, 0xd2:
				skip = 4
			case 0xcb, 0xcf, 0xd3:
				skip = 8
			case 0xcc, 0xd0:
				skip = 1
			case 0xcd, 0xd1:
				skip = 2
			case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1..16 with its type byte
				skip = 1 + 1<<(c-0xd4)
			case 0xdc:
				items, err = length(2)
			case 0xdd:
				items, err = length(4)
			case 0xde:
				items, err = length(2)
				items *= 2
			case 0xdf:
				items, err = length(4)
				items *= 2
			default: // 0xc1 is never used
				return fmt.Errorf("msgpack: invalid code %#x at byte %d", c, i-1)
			}
		}
		if err != nil {
			return err
		}
		if skip > len(b)-i {
			return fmt.Errorf("msgpack: %d bytes declared at byte %d, %d left", skip, i, len(b)-i)
		}
		i += skip
		if items > 0 {
			if items > len(b)-i {
				return fmt.Errorf("msgpack: %d elements declared at byte %d, %d bytes left", items, i, len(b)-i)
			}
			if len(pending) > maxDepth {
				return fmt.Errorf("msgpack: nested deeper than %d", maxDepth)
			}
			pending = append(pending, items)
		}
	}
	return nil
}
