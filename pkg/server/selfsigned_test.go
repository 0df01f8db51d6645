package server

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
	"time"

	apiserveroptions "k8s.io/apiserver/pkg/server/options"
	certutil "k8s.io/client-go/util/cert"
)

func TestDefaultServingCert(t *testing.T) {
	cases := []struct {
		name     string
		bind     string
		wantDNS  []string
		wantIPs  []string
		verifyAs string
	}{
		{name: "every interface: localhost and 127.0.0.1", bind: "0.0.0.0", wantDNS: []string{"localhost"}, wantIPs: []string{"127.0.0.1"}, verifyAs: "localhost"},
		{name: "one address: it is in the certificate", bind: "10.0.0.7", wantDNS: []string{"localhost"}, wantIPs: []string{"127.0.0.1", "10.0.0.7"}, verifyAs: "10.0.0.7"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := apiserveroptions.NewSecureServingOptions()
			s.BindPort, s.BindAddress = 10446, net.ParseIP(tc.bind)
			s.ServerCert.CertDirectory = ""
			if err := defaultServingCert(s, "localhost", []net.IP{net.ParseIP("127.0.0.1")}); err != nil {
				t.Fatal(err)
			}
			if s.ServerCert.GeneratedCert == nil {
				t.Fatal("no certificate generated")
			}
			certPEM, keyPEM := s.ServerCert.GeneratedCert.CurrentCertKeyContent()
			pair, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				t.Fatalf("the generated pair does not load: %v", err)
			}
			cert, err := x509.ParseCertificate(pair.Certificate[0])
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := cert.PublicKey.(*ecdsa.PublicKey); !ok {
				t.Errorf("key %T, want ECDSA", cert.PublicKey)
			}
			if !equalStrings(cert.DNSNames, tc.wantDNS) {
				t.Errorf("DNS names %v, want %v", cert.DNSNames, tc.wantDNS)
			}
			var ips []string
			for _, ip := range cert.IPAddresses {
				ips = append(ips, ip.String())
			}
			if !equalStrings(ips, tc.wantIPs) {
				t.Errorf("IP addresses %v, want %v", ips, tc.wantIPs)
			}
			roots := x509.NewCertPool()
			roots.AddCert(cert)
			if _, err := cert.Verify(x509.VerifyOptions{DNSName: tc.verifyAs, Roots: roots, CurrentTime: time.Now()}); err != nil {
				t.Errorf("a client trusting it cannot verify it for %s: %v", tc.verifyAs, err)
			}
		})
	}
}

func TestDefaultServingCertLeavesGivenFilesAndOffPort(t *testing.T) {
	s := apiserveroptions.NewSecureServingOptions()
	s.BindPort = 0
	if err := defaultServingCert(s, "localhost", nil); err != nil || s.ServerCert.GeneratedCert != nil {
		t.Errorf("secure port off: err %v, generated %v; want nothing done", err, s.ServerCert.GeneratedCert)
	}
	s = apiserveroptions.NewSecureServingOptions()
	s.BindPort = 10446
	s.ServerCert.CertKey.CertFile, s.ServerCert.CertKey.KeyFile = "/etc/adc/tls.crt", "/etc/adc/tls.key"
	if err := defaultServingCert(s, "localhost", nil); err != nil || s.ServerCert.GeneratedCert != nil {
		t.Errorf("files given: err %v, generated %v; want them used, nothing generated", err, s.ServerCert.GeneratedCert)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// BenchmarkServingCert compares the in-memory certificate adc makes at start with the one
// k8s.io/apiserver would (two RSA 2048 keys).
func BenchmarkServingCert(b *testing.B) {
	ips := []net.IP{net.ParseIP("127.0.0.1")}
	b.Run("ecdsa-p256", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := selfSignedCert("localhost", []string{"localhost"}, ips, time.Now()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("rsa-2048-apiserver", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := certutil.GenerateSelfSignedCertKey("localhost", ips, []string{"localhost"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
