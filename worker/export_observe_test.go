package worker

import "time"

// SetLogClock makes w's repeat limiter (Config.LogRepeatInterval) read now instead of
// time.Now, so that tests step its time.
func SetLogClock(w *Worker, now func() time.Time) { w.repeats.now = now }
