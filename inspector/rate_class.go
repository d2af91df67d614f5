package inspector

import (
	"context"

	"github.com/headgate/headgate"
)

// RateClassState is a rate class's limit, the tokens it holds now, and the jobs it set
// aside.
type RateClassState = headgate.RateClassState

// RateClass reads one rate class; an unlimited class has a nil Limit.
func (i *Inspector) RateClass(ctx context.Context, class string) (*RateClassState, error) {
	return i.store.RateClass(ctx, class)
}
