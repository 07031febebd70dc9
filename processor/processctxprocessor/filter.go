package processctxprocessor

// keyFilter selects the published keys that may be added to telemetry.
type keyFilter struct {
	include map[string]struct{} // nil: every key
	exclude map[string]struct{}
}

func newKeyFilter(cfg *Config) keyFilter {
	f := keyFilter{exclude: map[string]struct{}{}}
	if len(cfg.Include) > 0 {
		f.include = make(map[string]struct{}, len(cfg.Include))
		for _, k := range cfg.Include {
			f.include[k] = struct{}{}
		}
	}
	for _, k := range cfg.Exclude {
		f.exclude[k] = struct{}{}
	}
	// The pid keys name the process as the telemetry's source sees it; a
	// containerized SDK publishes its namespace pid, which must not replace it.
	for _, k := range cfg.PIDAttributes {
		f.exclude[k] = struct{}{}
	}
	return f
}

func (f keyFilter) keep(k string) bool {
	if _, ok := f.exclude[k]; ok {
		return false
	}
	if f.include == nil {
		return true
	}
	_, ok := f.include[k]
	return ok
}
