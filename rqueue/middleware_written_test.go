package rqueue_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/rqueue"
)

func TestWritten(t *testing.T) {
	t.Parallel()
	envs := make([]headgate.Envelope, 3)
	res := []headgate.EnqueueResult{{ID: "a"}, {ID: "b", Replayed: true}, {ID: "c"}}
	for name, c := range map[string]struct {
		err  error
		want []int
	}{
		"written":     {nil, []int{0, 2}},
		"not durable": {&headgate.NotDurableError{Replicas: 0, Wanted: 1}, []int{0, 2}},
		"refused":     {errors.New("backpressure"), nil},
	} {
		if got := rqueue.Written(envs, res, c.err); !slices.Equal(got, c.want) {
			t.Errorf("%s: Written = %v, want %v", name, got, c.want)
		}
	}
}
