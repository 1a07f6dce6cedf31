package views

import (
	"time"
)

// Admin page tabs.
const (
	AdminUsers  = "users"
	AdminTokens = "tokens"
	AdminAudit  = "audit"
)

// AdminUser is one account row.
type AdminUser struct {
	ID          int64
	Name        string
	Role        string
	HasPassword bool
	CreatedAt   time.Time
	Self        bool // the signed-in admin: not deletable here
}

// UsersView is the account administration page.
type UsersView struct {
	Layout LayoutView
	Users  []AdminUser
	Flash  string
	Roles  []string
}

// AdminToken is one API-token row.
type AdminToken struct {
	ID         int64
	Name       string
	Scope      string
	CreatedBy  string
	CreatedAt  time.Time
	LastUsedAt time.Time
	RevokedAt  time.Time
}

// TokensView is the API-token administration page. NewToken is set once,
// right after creation.
type TokensView struct {
	Layout   LayoutView
	Tokens   []AdminToken
	NewToken string
	NewName  string
	Scopes   []string
}

// AuditRow is one audit-log entry.
type AuditRow struct {
	ID            int64
	At            time.Time
	Actor, Action string
	Target, From  string
	Before, After string
}

// AuditView is a page of the audit log, newest first.
type AuditView struct {
	Layout LayoutView
	Rows   []AuditRow
	Older  string // link to the next page; "" at the end
}

func tabClass(active bool) string {
	if active {
		return "active"
	}
	return ""
}
