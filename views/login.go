package views

// LoginView is the sign-in page.
type LoginView struct {
	Layout LayoutView
	Next   string // where to go after signing in
	Name   string // the name tried, kept on failure
	Error  string // why the last attempt failed
}
