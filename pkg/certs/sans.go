package certs

import (
	"net"
	"slices"
	"strings"
)

// SANs are the subject alternative names of a serving certificate.
type SANs struct {
	DNSNames []string
	IPs      []net.IP
}

// ServiceSANs returns the names by which the API server may reach the
// webhook Service and the other Services of the same namespace that the
// certificate serves (the visibility API's): every form of their DNS
// names, plus extraIPs for a webhook reached by URL.
func ServiceSANs(services []string, namespace string, extraIPs []net.IP) SANs {
	var names []string
	for _, service := range services {
		names = append(names,
			service,
			service+"."+namespace,
			service+"."+namespace+".svc",
			service+"."+namespace+".svc.cluster.local",
		)
	}
	return SANs{DNSNames: names, IPs: extraIPs}
}

// equal tells whether a and b hold the same names, in any order. A
// certificate with a name too many is replaced too: it would keep trusting
// an address that the configuration no longer names.
func (a SANs) equal(b SANs) bool {
	return slices.Equal(sortedDNS(a.DNSNames), sortedDNS(b.DNSNames)) &&
		slices.Equal(sortedIPs(a.IPs), sortedIPs(b.IPs))
}

func sortedDNS(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strings.ToLower(n)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func sortedIPs(ips []net.IP) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		// String normalises IPv4 in its 4- and 16-byte forms alike.
		out[i] = ip.String()
	}
	slices.Sort(out)
	return slices.Compact(out)
}
