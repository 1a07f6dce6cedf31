// Package auth holds the console's access rules: roles and API-token
// scopes, the authenticated Principal, password hashing (bcrypt), random
// tokens stored as SHA-256 hashes, the login rate limiter and the trusted
// authenticating-proxy check. It is pure logic: no HTTP framework, no SQL.
package auth
