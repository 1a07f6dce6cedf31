package handlers

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/auth"
	"github.com/casebook/casebook/internal/i18n"
	"github.com/casebook/casebook/internal/route"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/views"
)

var (
	adminRoles  = []string{"viewer", "reviewer", "admin"}
	adminScopes = []string{"webhook", "read", "write"}
)

// Users lists the accounts.
func (h *Accounts) Users(c echo.Context) error {
	return h.renderUsers(c, http.StatusOK, c.QueryParam("done"))
}

func (h *Accounts) renderUsers(c echo.Context, status int, flash string) error {
	us, err := h.d.Store.Users(c.Request().Context())
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	me := auth.FromContext(ctx).Name
	v := views.UsersView{Layout: h.layout(i18n.T(ctx, "admin.users"), views.NavAdmin), Roles: adminRoles}
	switch flash {
	case "added":
		v.Flash = i18n.T(ctx, "admin.flash_added")
	case "saved":
		v.Flash = i18n.T(ctx, "admin.flash_saved")
	case "removed":
		v.Flash = i18n.T(ctx, "admin.flash_removed")
	}
	for _, u := range us {
		v.Users = append(v.Users, views.AdminUser{ID: u.ID, Name: u.Name, Role: u.Role, HasPassword: len(u.PasswordHash) > 0,
			CreatedAt: u.CreatedAt, Self: u.Name == me})
	}
	return render(c, status, views.UsersPage(v))
}

// passwordHash hashes the form's password; empty gives nil.
func passwordHash(c echo.Context) ([]byte, error) {
	pw := c.FormValue("password")
	if pw == "" {
		return nil, nil
	}
	h, err := auth.HashPassword(pw)
	if err != nil {
		return nil, badParam("password", "%s", strings.TrimPrefix(err.Error(), "auth: "))
	}
	return h, nil
}

// CreateUser adds an account.
func (h *Accounts) CreateUser(c echo.Context) error {
	name := strings.TrimSpace(c.FormValue("name"))
	if err := auth.ValidUserName(name); err != nil {
		return badParam("name", "%s", strings.TrimPrefix(err.Error(), "auth: "))
	}
	if _, err := auth.ParseRole(c.FormValue("role")); err != nil {
		return paramError("role", "param.role")
	}
	hash, err := passwordHash(c)
	if err != nil {
		return err
	}
	if _, err := h.d.Store.AddUser(c.Request().Context(), name, c.FormValue("role"), hash, h.d.Now()); err != nil {
		return archiveError(err, "name")
	}
	return redirect(c, route.URLQuery(route.Users, url.Values{"done": {"added"}}))
}

func pathID(c echo.Context, param string) (int64, error) {
	id, err := strconv.ParseInt(c.Param(param), 10, 64)
	if err != nil || id <= 0 {
		return 0, paramError(param, "param.not_number", strconv.Quote(truncate(c.Param(param), 32)))
	}
	return id, nil
}

// UpdateUser changes an account's role and, when given, its password.
func (h *Accounts) UpdateUser(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	if _, err := auth.ParseRole(c.FormValue("role")); err != nil {
		return paramError("role", "param.role")
	}
	hash, err := passwordHash(c)
	if err != nil {
		return err
	}
	if _, err := h.d.Store.UpdateUser(c.Request().Context(), id, c.FormValue("role"), hash, h.d.Now()); err != nil {
		return accountError(err, "id")
	}
	return redirect(c, route.URLQuery(route.Users, url.Values{"done": {"saved"}}))
}

// DeleteUser removes an account; an admin cannot remove their own.
func (h *Accounts) DeleteUser(c echo.Context) error {
	ctx := c.Request().Context()
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	if me := auth.FromContext(ctx); me.Name != "" {
		if u, err := h.d.Store.UserByName(ctx, me.Name); err == nil && u.ID == id {
			return &ParamError{Param: "id", Reason: "you cannot remove your own account", Status: http.StatusConflict, Key: "param.own_account"}
		}
	}
	if err := h.d.Store.DeleteUser(ctx, id, h.d.Now()); err != nil {
		return accountError(err, "id")
	}
	return redirect(c, route.URLQuery(route.Users, url.Values{"done": {"removed"}}))
}

func accountError(err error, param string) error {
	if errors.Is(err, store.ErrNotFound) {
		return HTTPError(http.StatusNotFound, "error.no_account").SetInternal(err)
	}
	return archiveError(err, param)
}

// Tokens lists the API tokens.
func (h *Accounts) Tokens(c echo.Context) error {
	return h.renderTokens(c, http.StatusOK, "", "")
}

func (h *Accounts) renderTokens(c echo.Context, status int, name, secret string) error {
	ts, err := h.d.Store.Tokens(c.Request().Context())
	if err != nil {
		return err
	}
	v := views.TokensView{Layout: h.layout(i18n.T(c.Request().Context(), "admin.tokens"), views.NavAdmin), Scopes: adminScopes, NewToken: secret, NewName: name}
	for _, t := range ts {
		v.Tokens = append(v.Tokens, views.AdminToken{ID: t.ID, Name: t.Name, Scope: t.Scope, CreatedBy: t.CreatedBy,
			CreatedAt: t.CreatedAt, LastUsedAt: t.LastUsedAt, RevokedAt: t.RevokedAt})
	}
	if secret != "" {
		c.Response().Header().Set("Cache-Control", "no-store")
	}
	return render(c, status, views.TokensPage(v))
}

// CreateToken makes an API token and shows its secret once.
func (h *Accounts) CreateToken(c echo.Context) error {
	name := strings.TrimSpace(c.FormValue("name"))
	if err := auth.ValidUserName(name); err != nil {
		return badParam("name", "%s", strings.TrimPrefix(err.Error(), "auth: "))
	}
	if _, err := auth.ParseScope(c.FormValue("scope")); err != nil {
		return paramError("scope", "param.scope")
	}
	secret, err := auth.NewToken(auth.TokenPrefix)
	if err != nil {
		return err
	}
	if _, err := h.d.Store.AddToken(c.Request().Context(), name, c.FormValue("scope"), auth.HashToken(secret), h.d.Now()); err != nil {
		return archiveError(err, "name")
	}
	return h.renderTokens(c, http.StatusCreated, name, secret)
}

// RevokeToken revokes an API token.
func (h *Accounts) RevokeToken(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	if err := h.d.Store.RevokeToken(c.Request().Context(), id, h.d.Now()); err != nil {
		return accountError(err, "id")
	}
	return redirect(c, route.URL(route.Tokens))
}

// auditPage is how many entries the audit page shows at once.
const auditPage = 100

// Audit shows the audit log, newest first, a page at a time.
func (h *Accounts) Audit(c echo.Context) error {
	var before int64
	if s := c.QueryParam("before"); s != "" {
		b, err := strconv.ParseInt(s, 10, 64)
		if err != nil || b <= 0 {
			return paramError("before", "param.entry_number")
		}
		before = b
	}
	es, err := h.d.Store.AuditLog(c.Request().Context(), store.AuditFilter{Before: before, Limit: auditPage})
	if err != nil {
		return err
	}
	v := views.AuditView{Layout: h.layout(i18n.T(c.Request().Context(), "admin.audit"), views.NavAdmin)}
	for _, e := range es {
		v.Rows = append(v.Rows, views.AuditRow{ID: e.ID, At: e.At, Actor: e.Actor, Action: e.Action, Target: e.Target,
			From: e.RemoteAddr, Before: string(e.Before), After: string(e.After)})
	}
	if len(es) == auditPage {
		v.Older = route.URLQuery(route.Audit, url.Values{"before": {strconv.FormatInt(es[len(es)-1].ID, 10)}})
	}
	return render(c, http.StatusOK, views.AuditPage(v))
}

// AuditJSON exports the whole audit log as a JSON array, newest first.
func (h *Accounts) AuditJSON(c echo.Context) error {
	ctx := c.Request().Context()
	hdr := c.Response().Header()
	hdr.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	hdr.Set("Content-Disposition", `attachment; filename="casebook-audit.json"`)
	c.Response().WriteHeader(http.StatusOK)
	w := c.Response()
	enc := json.NewEncoder(w)
	_, _ = w.Write([]byte("["))
	var before int64
	first := true
	for {
		es, err := h.d.Store.AuditLog(ctx, store.AuditFilter{Before: before, Limit: store.MaxPageSize})
		if err != nil {
			return err // the response is committed; the error is logged
		}
		for _, e := range es {
			if !first {
				_, _ = w.Write([]byte(","))
			}
			first = false
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		if len(es) < store.MaxPageSize {
			break
		}
		before = es[len(es)-1].ID
	}
	_, _ = w.Write([]byte("]\n"))
	return nil
}
