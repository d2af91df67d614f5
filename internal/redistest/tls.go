package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TLSServer is a private redis-server that also listens for TLS, with a certificate
// authority and server certificate generated for the test.
type TLSServer struct {
	*Server
	// TLSAddr is the address of the TLS port ("127.0.0.1:port"); Addr stays the plain one.
	TLSAddr string
	// CAFile is the PEM file of the authority that signed the server's certificate.
	CAFile string
	// RootCAs holds that authority, for a client's tls.Config.
	RootCAs *x509.CertPool
}

// StartTLS starts a private redis-server with a TLS port besides its plain one (the
// plain port serves the start-up probe and admin commands). Its certificate is made for
// 127.0.0.1 by a throwaway authority, so clients verify it for real: a client needs
// RootCAs, or it fails the handshake. Clients need no certificate of their own
// (tls-auth-clients no).
func StartTLS(tb testing.TB) *TLSServer {
	tb.Helper()
	dir := tb.TempDir()
	caFile, certFile, keyFile, pool, err := writeTestCerts(dir)
	if err != nil {
		tb.Fatalf("redistest: generate certificates: %v", err)
	}
	port, err := freePort(false)
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	s := StartWith(tb, "--tls-port", strconv.Itoa(port), "--tls-cert-file", certFile, "--tls-key-file", keyFile,
		"--tls-ca-cert-file", caFile, "--tls-auth-clients", "no")
	return &TLSServer{Server: s, TLSAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), CAFile: caFile, RootCAs: pool}
}

// URL returns the rediss:// URL of the TLS port.
func (s *TLSServer) URL() string { return "rediss://" + s.TLSAddr }

// TLSClient returns a client of the TLS port made from URL with the test authority
// trusted, closed via tb.Cleanup.
func (s *TLSServer) TLSClient(tb testing.TB) *redis.Client {
	tb.Helper()
	opts, err := redis.ParseURL(s.URL())
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	opts.TLSConfig.RootCAs = s.RootCAs
	c := redis.NewClient(opts)
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// writeTestCerts writes ca.pem, server.pem and server-key.pem into dir.
func writeTestCerts(dir string) (caFile, certFile, keyFile string, pool *x509.CertPool, err error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "headgate test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return
	}
	caFile, certFile, keyFile = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem")
	for _, f := range []struct {
		path, typ string
		der       []byte
	}{{caFile, "CERTIFICATE", caDER}, {certFile, "CERTIFICATE", der}, {keyFile, "EC PRIVATE KEY", keyDER}} {
		if err = os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), 0o600); err != nil {
			return
		}
	}
	pool = x509.NewCertPool()
	pool.AddCert(ca)
	return
}
