package views

// ErrorView is the view model of the error page.
type ErrorView struct {
	Layout    LayoutView
	Status    int    // HTTP status code
	Title     string // e.g. "Bad request"
	Message   string // what is wrong, safe to show
	Param     string // the offending query or form parameter, if any
	RequestID string // shown on server errors so a report can be traced
}
