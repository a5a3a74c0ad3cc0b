package etcdtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// TLSFiles are the PEM files of a cluster started with TLS: the CA that
// signed the members' certificate, and a client certificate and key the
// members accept (they require one).
type TLSFiles struct {
	CA, Cert, Key string
}

// makeTLS writes into dir a CA, a server certificate for 127.0.0.1 and a
// client certificate, all signed by the CA, and returns the client's
// files and the server's certificate and key files.
func makeTLS(dir string) (client TLSFiles, serverCert, serverKey string, err error) {
	caKey, caCert, caDER, err := selfSigned()
	if err != nil {
		return TLSFiles{}, "", "", err
	}
	client.CA = filepath.Join(dir, "ca.pem")
	if err := writePEM(client.CA, "CERTIFICATE", caDER); err != nil {
		return TLSFiles{}, "", "", err
	}
	issue := func(name string, usage ...x509.ExtKeyUsage) (certPath, keyPath string, err error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return "", "", err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "etcdtest-" + name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usage,
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			return "", "", err
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return "", "", err
		}
		certPath, keyPath = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
		if err := writePEM(certPath, "CERTIFICATE", der); err != nil {
			return "", "", err
		}
		return certPath, keyPath, writePEM(keyPath, "EC PRIVATE KEY", keyDER)
	}
	// The server's certificate is a client's too: etcd's gateway reaches
	// its own gRPC server with it.
	if serverCert, serverKey, err = issue("server", x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth); err != nil {
		return TLSFiles{}, "", "", err
	}
	if client.Cert, client.Key, err = issue("client", x509.ExtKeyUsageClientAuth); err != nil {
		return TLSFiles{}, "", "", err
	}
	return client, serverCert, serverKey, nil
}

// selfSigned makes a CA's key and certificate.
func selfSigned() (*ecdsa.PrivateKey, *x509.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "etcdtest CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return key, cert, der, err
}

func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}

// httpsClient is an HTTP client that trusts files.CA and presents the
// client certificate, for the harness's own health checks.
func httpsClient(files TLSFiles) (*http.Client, error) {
	ca, err := os.ReadFile(files.CA)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	pair, err := tls.LoadX509KeyPair(files.Cert, files.Key)
	if err != nil {
		return nil, err
	}
	return &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
	}}, nil
}
