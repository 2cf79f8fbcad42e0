// Package alertevent names the events syncd alerts on. It is the one
// list both the config check of alerts[].events (package config) and the
// notifier (package alert, whose Event.Type takes these values) accept;
// it has no code beyond the names.
package alertevent
