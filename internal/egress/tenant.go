package egress

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// ErrTenantDestination is wrapped by every refusal of an address a
// tenant chose (an AlertProvider's address in a Secret).
var ErrTenantDestination = errors.New("an address from a Secret may only be an https URL (http on loopback only) outside link-local, metadata, multicast and unspecified addresses")

// metadataAddrs are cloud metadata endpoints outside the link-local
// ranges (AWS's IPv6 one is a unique local address).
var metadataAddrs = []netip.Addr{netip.MustParseAddr("fd00:ec2::254")}

// CheckTenantURL vets a URL someone other than the operator chose: it
// must be https (plain http only to a loopback host, where nothing
// crosses the network), without user info, and its host must not be an
// address TenantClient refuses to dial. The error names the host and
// scheme, never the path or query (they hold the provider's secret).
func CheckTenantURL(u *url.URL) error {
	host := u.Hostname()
	switch {
	case u.User != nil:
		return fmt.Errorf("%w: the URL has user info; put credentials in the path or the Secret's other keys", ErrTenantDestination)
	case u.Scheme == "http" && !isLoopbackHost(host):
		return fmt.Errorf("%w: http://%s is plain http off loopback; use https", ErrTenantDestination, u.Host)
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("%w: scheme %q is not https", ErrTenantDestination, u.Scheme)
	}
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if err := checkTenantAddr(ip); err != nil {
			return err
		}
	}
	return nil
}

// isLoopbackHost reports whether host is localhost or a loopback IP.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// checkTenantAddr refuses the addresses no tenant may make syncd
// connect to: link-local (the 169.254.169.254 metadata service among
// them), cloud metadata addresses, multicast and unspecified.
func checkTenantAddr(ip netip.Addr) error {
	ip = ip.Unmap()
	switch {
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return fmt.Errorf("%w: %s is a link-local address (cloud metadata services live there)", ErrTenantDestination, ip)
	case ip.IsMulticast(), ip.IsUnspecified():
		return fmt.Errorf("%w: %s is a multicast or unspecified address", ErrTenantDestination, ip)
	}
	for _, m := range metadataAddrs {
		if ip == m {
			return fmt.Errorf("%w: %s is a cloud metadata address", ErrTenantDestination, ip)
		}
	}
	return nil
}

// TenantClient returns a client for addresses a tenant chose: every
// connection's resolved address passes checkTenantAddr (checked when it
// is dialled, so a name that resolves to a metadata address is refused
// too), and no redirect is followed (the 3xx answer is returned). With
// HTTPS_PROXY set the connection checked is the proxy's: the proxy is
// the operator's choice.
func TenantClient() *http.Client {
	t := Transport()
	d := &net.Dialer{Timeout: dialTimeout, KeepAlive: dialKeepAlive, Control: controlTenantDial}
	t.DialContext = d.DialContext
	return &http.Client{
		Transport:     t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// controlTenantDial refuses a connection to an address checkTenantAddr
// refuses, after name resolution and before the connection is made.
func controlTenantDial(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot read the dialled address", ErrTenantDestination)
	}
	return checkTenantAddr(ap.Addr())
}
