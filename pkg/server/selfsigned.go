package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/klog/v2"
)

// selfSignedValidity is how long a generated certificate is valid; in memory it lives as
// long as the process, and kube-controller-manager's (k8s.io/client-go/util/cert) is valid
// a year.
const selfSignedValidity = 365 * 24 * time.Hour

// servingCerts returns the secure port's certificates, as kube-controller-manager finds
// them: --tls-cert-file and --tls-private-key-file; else the pair in --cert-dir, made there
// if it is missing; else one made in memory. Files are reloaded when they change. A made
// certificate is for host, ips, and the bind address (or localhost when it binds every
// interface). adc makes an ECDSA P-256 key where k8s.io/apiserver makes two RSA 2048 keys
// (a CA and the certificate it signs): those cost about 0.2 s of a core at every start, on
// the path of the first attach, for a certificate no client can verify anyway.
func servingCerts(s *SecureServingOptions, host string, ips []net.IP) (dynamiccertificates.CertKeyContentProvider, []dynamiccertificates.SNICertKeyContentProvider, error) {
	var sni []dynamiccertificates.SNICertKeyContentProvider
	for _, nck := range s.SNICertKeys {
		c, err := dynamiccertificates.NewDynamicSNIContentFromFiles("sni-serving-cert", nck.CertFile, nck.KeyFile, nck.Names...)
		if err != nil {
			return nil, nil, fmt.Errorf("loading --tls-sni-cert-key %s,%s: %w", nck.CertFile, nck.KeyFile, err)
		}
		sni = append(sni, c)
	}
	files, fromFiles := s.certFiles()
	given := s.ServerCert.CertKey.CertFile != ""
	if !fromFiles || !given && !readable(files) {
		var dns []string
		if s.BindAddress == nil || s.BindAddress.IsUnspecified() {
			dns = append(dns, "localhost")
		} else {
			ips = append(ips, s.BindAddress)
		}
		certPEM, keyPEM, err := selfSignedCert(host, dns, ips, time.Now())
		if err != nil {
			return nil, nil, fmt.Errorf("generating a self-signed serving certificate (or give --tls-cert-file and --tls-private-key-file): %w", err)
		}
		if !fromFiles {
			c, err := dynamiccertificates.NewStaticCertKeyContent("Generated self signed cert", certPEM, keyPEM)
			return c, sni, err
		}
		if err := writeCertPair(files, certPEM, keyPEM); err != nil {
			return nil, nil, fmt.Errorf("writing the self-signed serving certificate to --cert-dir %s: %w", s.ServerCert.CertDirectory, err)
		}
		klog.Background().Info("Generated a self-signed serving certificate", "certFile", files.CertFile, "keyFile", files.KeyFile)
	}
	c, err := dynamiccertificates.NewDynamicServingContentFromFiles("serving-cert", files.CertFile, files.KeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("loading the serving certificate %s and key %s: %w", files.CertFile, files.KeyFile, err)
	}
	return c, sni, nil
}

// readable reports whether both files of a pair can be read.
func readable(ck CertKey) bool {
	for _, f := range []string{ck.CertFile, ck.KeyFile} {
		if _, err := os.ReadFile(f); err != nil {
			return false
		}
	}
	return true
}

// writeCertPair writes a generated pair: the certificate readable by all, the key by its
// owner only.
func writeCertPair(ck CertKey, certPEM, keyPEM []byte) error {
	if err := os.MkdirAll(filepath.Dir(ck.CertFile), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(ck.KeyFile, keyPEM, 0o600); err != nil {
		return err
	}
	return os.WriteFile(ck.CertFile, certPEM, 0o644)
}

// selfSignedCert makes a self-signed ECDSA P-256 serving certificate for host, dns and ips,
// valid from an hour before now (clock skew), and returns it and its key in PEM.
func selfSignedCert(host string, dns []string, ips []net.IP, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating the serving key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, fmt.Errorf("generating the certificate's serial number: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s@%d", host, now.Unix())},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(selfSignedValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              dns,
		IPAddresses:           ips,
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = append([]net.IP{ip}, ips...)
	} else if !slices.Contains(dns, host) {
		tmpl.DNSNames = append([]string{host}, dns...)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the serving key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}
