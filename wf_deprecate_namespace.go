package headgate

import "context"

// Deprecate marks a registered namespace deprecated. It is idempotent, and a name that
// is not registered is a no-op: deprecation never strands a namespace's data and never
// mints a record.
func (r *Registry) Deprecate(ctx context.Context, name string) error {
	if err := validateRequired("name", name, true); err != nil {
		return err
	}
	_, err := r.run(ctx, scriptWfDeprecateNamespace, name, name)
	return err
}
