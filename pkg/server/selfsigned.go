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
	"slices"
	"time"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	apiserveroptions "k8s.io/apiserver/pkg/server/options"
)

// selfSignedValidity is how long the in-memory certificate is valid; it lives as long as
// the process, and kube-controller-manager's (k8s.io/client-go/util/cert) is valid a year.
const selfSignedValidity = 365 * 24 * time.Hour

// defaultServingCert gives the secure port a certificate when none is configured, as
// kube-controller-manager does: for host, ips, and the bind address (or localhost when it
// binds every interface). Given files or a --cert-dir are left to k8s.io/apiserver, which
// reads or writes them. In memory, adc makes an ECDSA P-256 key where k8s.io/apiserver makes
// two RSA 2048 keys (a CA and the certificate it signs): those cost about 0.2 s of a core at
// every start, on the path of the first attach, for a certificate no client can verify
// anyway (it is self-signed and never written out).
func defaultServingCert(s *apiserveroptions.SecureServingOptions, host string, ips []net.IP) error {
	if s == nil || (s.BindPort == 0 && s.Listener == nil) {
		return nil
	}
	given := s.ServerCert.CertKey
	if given.CertFile != "" || given.KeyFile != "" || s.ServerCert.CertDirectory != "" {
		return s.MaybeDefaultWithSelfSignedCerts(host, nil, ips)
	}
	var dns []string
	if s.BindAddress == nil || s.BindAddress.IsUnspecified() {
		dns = append(dns, "localhost")
	} else {
		ips = append(ips, s.BindAddress)
	}
	certPEM, keyPEM, err := selfSignedCert(host, dns, ips, time.Now())
	if err != nil {
		return err
	}
	s.ServerCert.GeneratedCert, err = dynamiccertificates.NewStaticCertKeyContent("Generated self signed cert", certPEM, keyPEM)
	return err
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
