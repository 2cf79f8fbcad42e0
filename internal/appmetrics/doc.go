// Package appmetrics holds the Prometheus series of apps' reconciles
// that both drivers write: the file daemon for syncd.yaml's apps and the
// App controller for App objects. One set of series per process, so a
// dashboard or an alert rule reads every app, however it was declared.
// An App object's series carry its app name (<namespace>-<name>), the
// name its inventory and field managers use.
package appmetrics
