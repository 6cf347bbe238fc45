package config

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
)

// Load reads the configuration file at path, fills in the defaults and
// validates the result. An empty path gives the default configuration.
// Unknown fields are errors: a misspelt field would otherwise silently
// keep its default.
func Load(path string) (*configv1alpha1.Configuration, error) {
	var data []byte
	if path != "" {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("reading the configuration: %w", err)
		}
	}
	cfg, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("configuration %s: %w", path, err)
	}
	return cfg, nil
}

// Decode is Load for a file's content.
func Decode(data []byte) (*configv1alpha1.Configuration, error) {
	cfg := &configv1alpha1.Configuration{}
	if err := yaml.UnmarshalStrict(data, cfg); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	SetDefaults(cfg)
	if errs := Validate(cfg); len(errs) > 0 {
		return nil, fmt.Errorf("invalid: %w", errs.ToAggregate())
	}
	return cfg, nil
}
