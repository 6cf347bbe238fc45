// Package config loads the controller manager's configuration file
// (config.berth.dev/v1alpha1 Configuration): it decodes it strictly, fills
// in defaults and validates it.
//
// It owns the meaning of the defaults and the rules a configuration must
// follow. It does no I/O other than reading the file, and must not start
// anything: cmd/berth turns the result into manager options.
package config
