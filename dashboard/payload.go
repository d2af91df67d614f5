package dashboard

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/msgpackjson"
)

// maxShownBytes bounds how much of a payload, result or output a page shows.
const maxShownBytes = 64 << 10

// payloadText renders a job's payload or a workflow's input, result or event payload:
// msgpack (what rqueue writes) or JSON as indented JSON after Config.Redact, else text,
// else hex. With a redaction hook, what decodes as neither is hidden whole.
func (h *Handler) payloadText(kind string, b []byte) string {
	return h.decodedText(kind, b, false)
}

// workflowPayloadText renders a workflow event's input, result or payload as
// payloadText does, JSON first: the runtime records JSON, and a one-digit JSON number
// ("7") is also a msgpack integer (55).
func (h *Handler) workflowPayloadText(workflowType string, b []byte) string {
	return h.decodedText(workflowType, b, true)
}

func (h *Handler) decodedText(kind string, b []byte, jsonFirst bool) string {
	if len(b) == 0 {
		return ""
	}
	var v any
	ok := false
	if jsonFirst && json.Valid(b) {
		ok = json.Unmarshal(b, &v) == nil
	}
	if !ok {
		v, ok = msgpackjson.Decode(b)
	}
	if !ok && json.Valid(b) {
		ok = json.Unmarshal(b, &v) == nil
	}
	if ok {
		if h.cfg.Redact != nil {
			v = h.cfg.Redact(kind, v)
		}
		if out, err := json.MarshalIndent(v, "", "  "); err == nil {
			return clip(string(out))
		}
	}
	if h.cfg.Redact != nil {
		// Only a decoded value can be redacted field by field: hide the rest whole.
		return fmt.Sprintf("(%d bytes, neither msgpack nor JSON: hidden by the redaction hook)", len(b))
	}
	return rawText(b)
}

// blobText renders a result or output (see bytesText).
func blobText(b *headgate.StoredBlob) string {
	if b == nil {
		return ""
	}
	return bytesText(b.Bytes)
}

// bytesText renders bytes of unknown encoding: text first, then msgpack as JSON, then hex.
func bytesText(b []byte) string {
	if isText(b) {
		return clip(string(b))
	}
	if v, ok := msgpackjson.Decode(b); ok {
		if out, err := json.MarshalIndent(v, "", "  "); err == nil {
			return clip(string(out))
		}
	}
	return rawText(b)
}

func rawText(b []byte) string {
	if isText(b) {
		return clip(string(b))
	}
	return fmt.Sprintf("%d bytes: %s", len(b), clip(hex.EncodeToString(b)))
}

func isText(b []byte) bool {
	return utf8.Valid(b) && !strings.ContainsFunc(string(b), func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' && r != '\r' })
}

func clip(s string) string {
	if len(s) <= maxShownBytes {
		return s
	}
	cut := maxShownBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n… (%d bytes in all)", len(s))
}
