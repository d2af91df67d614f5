package headgate

import "context"

// SetPolicy writes every field of p as the namespace's policy, which every worker of the
// namespace applies from its next call on. Out-of-range fields are an *InvalidError
// naming the field, and nothing is written. To change a few fields, read Policy, change
// them and write it back.
func (s *Store) SetPolicy(ctx context.Context, p *Policy) error {
	if p == nil {
		return invalid("Policy", "is nil")
	}
	if err := p.validate(); err != nil {
		return err
	}
	args := make([]any, 0, len(policyFields))
	for _, f := range policyFields {
		var v int64
		if f.dur != nil {
			v = ms(*f.dur(p))
		} else {
			v = int64(*f.num(p))
		}
		args = append(args, v) // in PolicyFields order: lua/set_policy.lua's ARGV
	}
	_, err := s.run(ctx, scriptSetPolicy, "", args...)
	return err
}

var scriptSetPolicy = loadScript("set_policy")
