package diagnose

// Wants returns the catalog ids the built-in rule of a cause reads, nil
// for a cause without a rule ("none", "unknown"). A source that lacks all
// of them cannot show the cause to the rules at all.
func Wants(cause string) []string {
	for _, r := range Rules() {
		if f, ok := r.(ruleFunc); ok && f.id == cause {
			return append([]string(nil), f.wants...)
		}
	}
	return nil
}
