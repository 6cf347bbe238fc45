// Package v1alpha1 holds the config.berth.dev/v1alpha1 API: the
// Configuration file that the Berth controller manager reads at start.
//
// It is a file format, not a served kind: Configuration embeds TypeMeta
// only, so no CRD is generated for it. The package holds types, default
// values and constants only; defaulting, validation and loading live in
// pkg/config.
//
// +kubebuilder:object:generate=true
// +groupName=config.berth.dev
package v1alpha1
