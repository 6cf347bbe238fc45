// Package metrics defines Berth's Prometheus metrics, served with
// controller-runtime's on the manager's metrics endpoint. It only counts;
// the controllers record what they did after the API write succeeded.
package metrics
