package headgate

import (
	"time"
)

// Blob is opaque versioned bytes: a job's result or output.
type Blob struct {
	SchemaVersion int
	Bytes         []byte
}

func validateBlob(field string, b *Blob) error {
	switch {
	case b.SchemaVersion <= 0:
		return invalid(field+".SchemaVersion", "must be greater than zero")
	case b.SchemaVersion > MaxSchemaVersion:
		return invalid(field+".SchemaVersion", "is %d, more than the portable limit %d", b.SchemaVersion, MaxSchemaVersion)
	case len(b.Bytes) > MaxPayloadBytes:
		return invalid(field+".Bytes", "is %d bytes, more than the %d byte limit", len(b.Bytes), MaxPayloadBytes)
	}
	return nil
}

// StoredBlob is a result or output as stored: stamped with the writer's fence and the
// store time.
type StoredBlob struct {
	Blob
	Fence     int64
	UpdatedAt time.Time
}
