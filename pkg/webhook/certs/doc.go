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
// Why not github.com/open-policy-agent/cert-controller: it puts only DNS
// names in the certificate and finds webhooks by Service reference, while
// the local cluster runs the controller outside the cluster and reaches it
// through clientConfig.url https://127.0.0.1:<port>, which needs an IP
// subject alternative name. What we need is small (a few hundred lines of
// crypto/x509 and two patches) and this keeps go.mod free of another
// module and its dependency updates.
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
