package server

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"
)

func TestServingCertInMemory(t *testing.T) {
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
			s := NewSecureServingOptions()
			s.BindAddress = net.ParseIP(tc.bind)
			provider, sni, err := servingCerts(s, "localhost", []net.IP{net.ParseIP("127.0.0.1")})
			if err != nil {
				t.Fatal(err)
			}
			if provider == nil || len(sni) != 0 {
				t.Fatalf("certificate %v, SNI %v; want one generated, no SNI", provider, sni)
			}
			certPEM, keyPEM := provider.CurrentCertKeyContent()
			cert := parsePair(t, certPEM, keyPEM)
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

// Given files are served as they are; --cert-dir gets a pair made once and kept.
func TestServingCertFromFiles(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("adc.example", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for f, data := range map[string][]byte{certFile: certPEM, keyFile: keyPEM} {
		if err := os.WriteFile(f, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := NewSecureServingOptions()
	s.ServerCert.CertKey = CertKey{certFile, keyFile}
	s.ServerCert.CertDirectory = filepath.Join(dir, "ignored")
	provider, _, err := servingCerts(s, "localhost", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := provider.CurrentCertKeyContent(); !bytes.Equal(got, certPEM) {
		t.Errorf("--tls-cert-file given: serving another certificate")
	}
	if _, err := os.Stat(s.ServerCert.CertDirectory); !os.IsNotExist(err) {
		t.Errorf("--cert-dir written although --tls-cert-file is given (%v)", err)
	}

	s = NewSecureServingOptions()
	s.ServerCert.CertDirectory = filepath.Join(dir, "certs")
	first, _, err := servingCerts(s, "localhost", nil)
	if err != nil {
		t.Fatal(err)
	}
	made, madeKey := first.CurrentCertKeyContent()
	parsePair(t, made, madeKey)
	if info, err := os.Stat(filepath.Join(s.ServerCert.CertDirectory, "adc.key")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("--cert-dir's key: %v, %v; want adc.key readable by its owner only", info, err)
	}
	again, _, err := servingCerts(s, "localhost", nil)
	if err != nil {
		t.Fatal(err)
	}
	if kept, _ := again.CurrentCertKeyContent(); !bytes.Equal(kept, made) {
		t.Errorf("--cert-dir: a second start made a new certificate instead of reading adc.crt")
	}

	s.ServerCert.CertKey = CertKey{filepath.Join(dir, "missing.crt"), filepath.Join(dir, "missing.key")}
	if _, _, err := servingCerts(s, "localhost", nil); err == nil {
		t.Errorf("missing --tls-cert-file: no error")
	}
}

func parsePair(t *testing.T, certPEM, keyPEM []byte) *x509.Certificate {
	t.Helper()
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatalf("the pair does not load: %v", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return cert
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
