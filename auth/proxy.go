package auth

import (
	"fmt"
	"net/netip"
	"strings"
)

// Proxy trusts identity headers (X-Forwarded-User, X-Forwarded-Email, as
// oauth2-proxy sends them) only from configured proxy addresses.
type Proxy struct {
	Trusted []netip.Prefix
}

// ParseProxies parses a comma-separated list of addresses and CIDR ranges.
func ParseProxies(list string) (Proxy, error) {
	var p Proxy
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "/") {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return p, fmt.Errorf("auth: trusted proxy %q: %w", s, err)
			}
			p.Trusted = append(p.Trusted, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		pf, err := netip.ParsePrefix(s)
		if err != nil {
			return p, fmt.Errorf("auth: trusted proxy %q: %w", s, err)
		}
		p.Trusted = append(p.Trusted, pf.Masked())
	}
	return p, nil
}

// Trusts reports whether the direct peer addr ("host:port" or an address)
// is a trusted proxy.
func (p Proxy) Trusts(addr string) bool {
	a, err := netip.ParseAddrPort(addr)
	var ip netip.Addr
	if err == nil {
		ip = a.Addr()
	} else if ip, err = netip.ParseAddr(addr); err != nil {
		return false
	}
	ip = ip.Unmap()
	for _, pf := range p.Trusted {
		if pf.Contains(ip) {
			return true
		}
	}
	return false
}

// MaxUserLen bounds a user name from any source.
const MaxUserLen = 128

// User returns the user a trusted proxy names in its headers (get reads a
// header): X-Forwarded-User, else X-Forwarded-Email. It returns "" when
// the peer is not trusted or names nobody, or the name is unusable.
func (p Proxy) User(peer string, get func(string) string) string {
	if !p.Trusts(peer) {
		return ""
	}
	name := strings.TrimSpace(get("X-Forwarded-User"))
	if name == "" {
		name = strings.TrimSpace(get("X-Forwarded-Email"))
	}
	if ValidUserName(name) != nil {
		return ""
	}
	return name
}

// ValidUserName checks a user name: 1 to MaxUserLen printable characters
// without spaces at either end.
func ValidUserName(name string) error {
	if name == "" || strings.TrimSpace(name) != name {
		return fmt.Errorf("auth: user name %q is empty or has surrounding spaces", name)
	}
	if len(name) > MaxUserLen {
		return fmt.Errorf("auth: user name is %d bytes; the limit is %d", len(name), MaxUserLen)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("auth: user name %q has a control character", name)
		}
	}
	return nil
}
