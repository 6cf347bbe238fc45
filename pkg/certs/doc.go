// Package certs gives Berth's webhook server its serving certificate
// without cert-manager. A Manager generates a self-signed CA and a serving
// certificate for the webhook Service (and extra IPs, for a controller
// that runs outside the cluster and is reached by URL), keeps both in a
// Secret so that every replica and restart shares one CA, writes them into
// the webhook certificate directory, serves them from memory through
// TLSOpt, writes the CA into every webhook of the named
// ValidatingWebhookConfiguration and MutatingWebhookConfiguration (again
// whenever those are re-applied), and renews the serving certificate when
// less than a sixth of its validity remains.
//
// It owns the certificates' life cycle only: it registers no webhooks and
// decides nothing about admission.
//
// Why our own rather than github.com/open-policy-agent/cert-controller:
// its rotator is built around DNS names of a Service, while the local
// cluster runs the controller outside the cluster and reaches it through
// clientConfig.url https://127.0.0.1:<port>, which needs an IP subject
// alternative name; we also want to fall back to the certificate directory
// when the Secret's namespace does not exist, and to serve the certificate
// from memory so that the webhook server need not wait for files. What we
// need is small (a few hundred lines of crypto/x509 and one JSON patch)
// and keeps go.mod free of another module and its update cycle.
//
// The decisions (Plan, NewCA, NewServing, the CA bundle patch) are pure
// functions with an injected time; Manager does the I/O.
//
// # Wiring in cmd/berth
//
//	certsMgr := certs.New(certs.OptionsFrom(cfg))
//	// The webhook server takes its certificate from memory, so it may
//	// start before the files exist, and picks up renewals.
//	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
//		WebhookServer: webhook.NewServer(webhook.Options{
//			Host: cfg.Webhook.Host, Port: int(cfg.Webhook.Port), CertDir: cfg.Webhook.CertDir,
//			TLSOpts: []func(*tls.Config){certsMgr.TLSOpt},
//		}),
//		...
//	})
//	err = certsMgr.SetupWithManager(mgr) // the runnable and the CA bundle controller
//	err = mgr.AddReadyzCheck("webhook-certs", certsMgr.Checker())
//
// With internalCertManagement.enable false, skip all of this and leave
// TLSOpts empty: the webhook server then reads CertDir itself.
//
// Code that needs the certificates before it goes on (e.g. a webhook
// server configured from files in CertDir) waits on Ready().
package certs
