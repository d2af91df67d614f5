package rqueue_test

import (
	"testing"

	"github.com/headgate/headgate/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }
