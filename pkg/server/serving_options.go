package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"
)

// CertKey is a certificate file and the file of its private key, both PEM.
type CertKey struct {
	CertFile, KeyFile string
}

// ServerCert is where the serving certificate comes from: files (--tls-cert-file,
// --tls-private-key-file), else PairName.crt and .key in CertDirectory (--cert-dir; made
// there if missing), else a certificate made in memory.
type ServerCert struct {
	CertKey       CertKey
	CertDirectory string
	PairName      string
}

// SecureServingOptions are kube-controller-manager's flags for its HTTPS listener, with the
// same names, defaults and meaning (k8s.io/apiserver's SecureServingOptions). adc declares
// them itself so that it does not link k8s.io/apiserver's generic API server, whose
// packages cost every adc process about 13 MiB of memory for nothing it serves.
type SecureServingOptions struct {
	// BindAddress is --bind-address; unspecified (0.0.0.0 or ::) listens on every interface.
	BindAddress net.IP
	// BindPort is --secure-port; 0 turns HTTPS off.
	BindPort int
	// Listener, when set (tests), is used instead of binding BindAddress:BindPort.
	Listener net.Listener
	// ServerCert is the serving certificate's source.
	ServerCert ServerCert
	// SNICertKeys are --tls-sni-cert-key: more certificates, chosen by the name a client asks for.
	SNICertKeys []cliflag.NamedCertKey
	// CipherSuites are --tls-cipher-suites (names); empty is Go's default.
	CipherSuites []string
	// CurvePreferences are --tls-curve-preferences (Go crypto/tls CurveID values).
	CurvePreferences []int32
	// MinTLSVersion is --tls-min-version; empty is TLS 1.2.
	MinTLSVersion string
	// HTTP2MaxStreamsPerConnection is --http2-max-streams-per-connection; 0 is 100, as
	// k8s.io/apiserver serves.
	HTTP2MaxStreamsPerConnection int
	// DisableHTTP2Serving is --disable-http2-serving.
	DisableHTTP2Serving bool
	// PermitPortSharing is --permit-port-sharing (SO_REUSEPORT).
	PermitPortSharing bool
	// PermitAddressSharing is --permit-address-sharing (SO_REUSEADDR).
	PermitAddressSharing bool
}

// NewSecureServingOptions returns adc's defaults: every interface, DefaultSecurePort, and a
// certificate made in memory (no --cert-dir: the root filesystem of adc's Pod is read-only,
// as kube-controller-manager's default).
func NewSecureServingOptions() *SecureServingOptions {
	return &SecureServingOptions{
		BindAddress: net.IPv4zero,
		BindPort:    DefaultSecurePort,
		ServerCert:  ServerCert{PairName: "adc"},
	}
}

// AddFlags adds the flags with kube-controller-manager's names and help.
func (s *SecureServingOptions) AddFlags(fs *pflag.FlagSet) {
	fs.IPVar(&s.BindAddress, "bind-address", s.BindAddress, ""+
		"The IP address on which to listen for the --secure-port port. The "+
		"associated interface(s) must be reachable by the rest of the cluster, and by CLI/web "+
		"clients. If blank or an unspecified address (0.0.0.0 or ::), all interfaces and IP address families will be used.")
	fs.IntVar(&s.BindPort, "secure-port", s.BindPort,
		"The port on which to serve HTTPS with authentication and authorization. If 0, don't serve HTTPS at all.")
	fs.BoolVar(&s.DisableHTTP2Serving, "disable-http2-serving", s.DisableHTTP2Serving,
		"If true, HTTP2 serving will be disabled [default=false]")
	fs.StringVar(&s.ServerCert.CertDirectory, "cert-dir", s.ServerCert.CertDirectory, ""+
		"The directory where the TLS certs are located. "+
		"If --tls-cert-file and --tls-private-key-file are provided, this flag will be ignored.")
	fs.StringVar(&s.ServerCert.CertKey.CertFile, "tls-cert-file", s.ServerCert.CertKey.CertFile, ""+
		"File containing the default x509 Certificate for HTTPS. (CA cert, if any, concatenated "+
		"after server cert). If HTTPS serving is enabled, and --tls-cert-file and "+
		"--tls-private-key-file are not provided, a self-signed certificate and key "+
		"are generated for the public address and saved to the directory specified by --cert-dir, "+
		"or kept in memory when --cert-dir is empty.")
	fs.StringVar(&s.ServerCert.CertKey.KeyFile, "tls-private-key-file", s.ServerCert.CertKey.KeyFile,
		"File containing the default x509 private key matching --tls-cert-file.")
	fs.StringSliceVar(&s.CipherSuites, "tls-cipher-suites", s.CipherSuites,
		"Comma-separated list of cipher suites for the server. "+
			"If omitted, the default Go cipher suites will be used. \n"+
			"Preferred values: "+strings.Join(cliflag.PreferredTLSCipherNames(), ", ")+". \n"+
			"Insecure values: "+strings.Join(cliflag.InsecureTLSCipherNames(), ", ")+".")
	fs.Int32SliceVar(&s.CurvePreferences, "tls-curve-preferences", s.CurvePreferences,
		"Comma-separated list of numeric Go crypto/tls CurveID values, "+
			"as the allowed key exchange mechanisms for the server. "+
			"See https://pkg.go.dev/crypto/tls#CurveID. If omitted, the default Go curves will be used.")
	fs.StringVar(&s.MinTLSVersion, "tls-min-version", s.MinTLSVersion,
		"Minimum TLS version supported. Possible values: "+strings.Join(cliflag.TLSPossibleVersions(), ", "))
	fs.Var(cliflag.NewNamedCertKeyArray(&s.SNICertKeys), "tls-sni-cert-key", ""+
		"A pair of x509 certificate and private key file paths, optionally suffixed with a list of "+
		"domain patterns which are fully qualified domain names, possibly with prefixed wildcard "+
		"segments. The domain patterns also allow IP addresses. "+
		"If no domain patterns are provided, the names of the certificate are "+
		"extracted. Non-wildcard matches trump over wildcard matches, explicit domain patterns "+
		"trump over extracted names. For multiple key/certificate pairs, use the "+
		"--tls-sni-cert-key multiple times. "+
		"Examples: \"example.crt,example.key\" or \"foo.crt,foo.key:*.foo.com,foo.com\".")
	fs.IntVar(&s.HTTP2MaxStreamsPerConnection, "http2-max-streams-per-connection", s.HTTP2MaxStreamsPerConnection, ""+
		"The limit that the server gives to clients for "+
		"the maximum number of streams in an HTTP/2 connection. "+
		"Zero means to use golang's default.")
	fs.BoolVar(&s.PermitPortSharing, "permit-port-sharing", s.PermitPortSharing,
		"If true, SO_REUSEPORT will be used when binding the port, which allows "+
			"more than one instance to bind on the same address and port. [default=false]")
	fs.BoolVar(&s.PermitAddressSharing, "permit-address-sharing", s.PermitAddressSharing,
		"If true, SO_REUSEADDR will be used when binding the port. This allows binding "+
			"to wildcard IPs like 0.0.0.0 and specific IPs in parallel, and it avoids waiting "+
			"for the kernel to release sockets in TIME_WAIT state. [default=false]")
}

// Validate checks the flags' values, naming the flag that is wrong.
func (s *SecureServingOptions) Validate() []error {
	var errs []error
	if s.BindPort < 0 || s.BindPort > 65535 {
		errs = append(errs, fmt.Errorf("--secure-port %v must be between 0 and 65535, inclusive. 0 for turning off secure port", s.BindPort))
	}
	if (s.ServerCert.CertKey.CertFile == "") != (s.ServerCert.CertKey.KeyFile == "") {
		errs = append(errs, errors.New("--tls-cert-file and --tls-private-key-file go together: give both or neither"))
	}
	if s.ServerCert.CertDirectory != "" && s.ServerCert.PairName == "" {
		errs = append(errs, errors.New("--cert-dir needs a certificate pair name"))
	}
	if _, err := cliflag.TLSCipherSuites(s.CipherSuites); err != nil {
		errs = append(errs, fmt.Errorf("--tls-cipher-suites: %w", err))
	}
	if _, err := cliflag.TLSCurvePreferences(s.CurvePreferences); err != nil {
		errs = append(errs, fmt.Errorf("--tls-curve-preferences: %w", err))
	}
	if _, err := cliflag.TLSVersion(s.MinTLSVersion); err != nil {
		errs = append(errs, fmt.Errorf("--tls-min-version: %w", err))
	}
	if s.HTTP2MaxStreamsPerConnection < 0 {
		errs = append(errs, fmt.Errorf("--http2-max-streams-per-connection %d must not be negative", s.HTTP2MaxStreamsPerConnection))
	}
	return errs
}

// on reports whether HTTPS is to be served.
func (s *SecureServingOptions) on() bool {
	return s != nil && (s.BindPort > 0 || s.Listener != nil)
}

// listen returns Listener, or binds BindAddress:BindPort with the socket options asked for.
func (s *SecureServingOptions) listen() (net.Listener, error) {
	if s.Listener != nil {
		if _, ok := s.Listener.Addr().(*net.TCPAddr); !ok {
			return nil, fmt.Errorf("the secure port's listener is on %s, not TCP", s.Listener.Addr())
		}
		return s.Listener, nil
	}
	var opts []int
	if s.PermitPortSharing {
		opts = append(opts, unix.SO_REUSEPORT)
	}
	if s.PermitAddressSharing {
		opts = append(opts, unix.SO_REUSEADDR)
	}
	lc := net.ListenConfig{}
	if len(opts) > 0 {
		lc.Control = func(_, _ string, conn syscall.RawConn) error {
			var serr error
			if err := conn.Control(func(fd uintptr) {
				for _, o := range opts {
					if serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, o, 1); serr != nil {
						return
					}
				}
			}); err != nil {
				return err
			}
			return serr
		}
	}
	host := "" // every interface
	if s.BindAddress != nil {
		host = s.BindAddress.String()
	}
	addr := net.JoinHostPort(host, strconv.Itoa(s.BindPort))
	l, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	return l, nil
}

// baseTLSConfig is the TLS configuration before certificates: TLS 1.2 at least (or
// --tls-min-version), the cipher suites and curves asked for, HTTP/2 unless disabled.
func (s *SecureServingOptions) baseTLSConfig(logger klog.Logger) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
	if s.DisableHTTP2Serving {
		c.NextProtos = []string{"http/1.1"}
	}
	v, err := cliflag.TLSVersion(s.MinTLSVersion)
	if err != nil {
		return nil, fmt.Errorf("--tls-min-version: %w", err)
	}
	if v > 0 {
		c.MinVersion = v
	}
	if len(s.CipherSuites) > 0 {
		if c.CipherSuites, err = cliflag.TLSCipherSuites(s.CipherSuites); err != nil {
			return nil, fmt.Errorf("--tls-cipher-suites: %w", err)
		}
		insecure := cliflag.InsecureTLSCiphers()
		for _, name := range s.CipherSuites {
			if _, bad := insecure[name]; bad {
				logger.Info("Warning: an insecure cipher suite is allowed", "cipherSuite", name)
			}
		}
	}
	if len(s.CurvePreferences) > 0 {
		if c.CurvePreferences, err = cliflag.TLSCurvePreferences(s.CurvePreferences); err != nil {
			return nil, fmt.Errorf("--tls-curve-preferences: %w", err)
		}
	}
	return c, nil
}

// certFiles returns the files the serving certificate is read from: --tls-cert-file and
// --tls-private-key-file, else the pair in --cert-dir; none means one made in memory.
func (s *SecureServingOptions) certFiles() (CertKey, bool) {
	if ck := s.ServerCert.CertKey; ck.CertFile != "" || ck.KeyFile != "" {
		return ck, true
	}
	if dir := s.ServerCert.CertDirectory; dir != "" {
		return CertKey{filepath.Join(dir, s.ServerCert.PairName+".crt"), filepath.Join(dir, s.ServerCert.PairName+".key")}, true
	}
	return CertKey{}, false
}
