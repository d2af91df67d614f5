package inspector

// audit logs an operator write that took effect (err nil) and returns err.
func (i *Inspector) audit(err error, msg string, attrs ...any) error {
	if err == nil {
		i.log.Info(msg, attrs...)
	}
	return err
}
