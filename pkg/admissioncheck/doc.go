// Package admissioncheck keeps the Active condition of the AdmissionChecks
// that Berth decides itself (berth.dev/provisioning-request,
// berth.dev/multicluster): each names its parameters, an object of a kind
// of Berth's, and is active when they exist and can be used. The checks'
// controllers differ only in what they ask of their parameters.
package admissioncheck
