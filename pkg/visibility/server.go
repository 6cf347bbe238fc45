package visibility

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
)

// The ConfigMap the API server publishes for the servers it aggregates:
// the CA of its front-proxy client certificate, the names that
// certificate may carry, and the headers that carry the user.
const (
	authNamespace = "kube-system"
	authConfigMap = "extension-apiserver-authentication"
)

// Server serves the API on its own TLS listener, to the API server's
// front proxy only: a request must come with a client certificate signed
// by the API server's requestheader CA and carrying one of its allowed
// names (the configuration the API server publishes in
// kube-system/extension-apiserver-authentication, re-read when it
// changes). Anyone else who reaches the port is refused, whatever headers
// they send. Authorization is the API server's: it checks the caller's
// RBAC on clusterqueues/pendingworkloads or, in a namespace,
// localqueues/pendingworkloads before it proxies the request.
//
// Every replica serves; one that does not lead answers 503 (Advertiser
// routes the Service to the leader only).
type Server struct {
	// Addr is the host:port to listen on.
	Addr string
	// Handler serves the API (NewHandler).
	Handler http.Handler
	// Kube reads the authentication ConfigMap.
	Kube kubernetes.Interface
	// GetCertificate gives the serving certificate (pkg/certs).
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
}

// NeedLeaderElection is false: every replica listens.
func (s *Server) NeedLeaderElection() bool { return false }

// Start serves until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("visibility")
	ca, err := dynamiccertificates.NewDynamicCAFromConfigMapController("requestheader-client-ca", authNamespace, authConfigMap, "requestheader-client-ca-file", s.Kube)
	if err != nil {
		return err
	}
	headers := headerrequest.NewRequestHeaderAuthRequestController(authConfigMap, authNamespace, s.Kube,
		"requestheader-username-headers", "requestheader-uid-headers", "requestheader-group-headers",
		"requestheader-extra-headers-prefix", "requestheader-allowed-names")
	// Without the ConfigMap (an API server with no front proxy) every
	// request is refused until it appears.
	if err := ca.RunOnce(ctx); err != nil {
		log.Info("The API server publishes no front-proxy CA yet: the visibility API refuses every request until it does", "configMap", authNamespace+"/"+authConfigMap, "error", err.Error())
	}
	_ = headers.RunOnce(ctx)
	go ca.Run(ctx, 1)
	go headers.Run(ctx, 1)
	auth := headerrequest.NewDynamicVerifyOptionsSecure(ca.VerifyOptions, headerrequest.StringSliceProviderFunc(headers.AllowedClientNames),
		headerrequest.StringSliceProviderFunc(headers.UsernameHeaders), headerrequest.StringSliceProviderFunc(headers.UIDHeaders),
		headerrequest.StringSliceProviderFunc(headers.GroupHeaders), headerrequest.StringSliceProviderFunc(headers.ExtraHeaderPrefixes))

	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("visibility API: %w", err)
	}
	srv := &http.Server{
		Handler:           authenticated(auth, s.Handler),
		ReadHeaderTimeout: 10 * time.Second,
		// Handshakes the API server fails while the APIService does not
		// yet hold the CA are expected at start: detail, not errors.
		ErrorLog: stdlog.New(logWriter{log.V(2)}, "", 0),
		TLSConfig: &tls.Config{
			MinVersion:     tls.VersionTLS12,
			GetCertificate: s.GetCertificate,
			// Verified by the authenticator against the CA it reads.
			ClientAuth: tls.RequestClientCert,
		},
	}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Info("Serving the visibility API", "address", ln.Addr().String())
	if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// logWriter writes the HTTP server's own messages to the controller's log.
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Info(strings.TrimSpace(string(p)))
	return len(p), nil
}

// authenticated lets through only the requests the API server's front
// proxy makes for a user.
func authenticated(auth authenticator.Request, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok, err := auth.AuthenticateRequest(r); !ok || err != nil {
			msg := "only the Kubernetes API server may call the visibility API: read it through the API server"
			if err != nil {
				msg += ": " + err.Error()
			}
			writeStatus(w, unauthorized(msg))
			return
		}
		next.ServeHTTP(w, r)
	})
}
