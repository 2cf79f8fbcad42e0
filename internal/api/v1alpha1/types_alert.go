package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Kinds of the alert objects.
const (
	KindAlertProvider = "AlertProvider"
	KindAlert         = "Alert"
)

// Resources of the alert objects, as the dynamic client addresses them.
var (
	AlertProviderResource = GroupVersion.WithResource("alertproviders")
	AlertResource         = GroupVersion.WithResource("alerts")
)

// Keys of the Secret an AlertProvider's secretRef names.
const (
	// SecretKeyAddress holds the provider's webhook URL (Slack incoming
	// webhook, Teams incoming or Workflows webhook, Discord channel
	// webhook, or the endpoint of a generic webhook).
	SecretKeyAddress = "address"
	// SecretKeyHMACKey holds the key that signs a webhook provider's
	// payloads (HMAC-SHA256); required for type webhook.
	SecretKeyHMACKey = "hmacKey"
)

// Reasons of the alert objects' Ready condition.
const (
	// ReasonProviderNotFound: the Alert's providerRef names no
	// AlertProvider in its namespace.
	ReasonProviderNotFound Reason = "ProviderNotFound"
	// ReasonProviderInvalid: the provider's Secret lacks a key, holds no
	// http(s) URL, or its address is one syncd refuses to reach.
	ReasonProviderInvalid Reason = "ProviderInvalid"
)

// AlertProvider is a chat channel or webhook endpoint that Alerts of the
// same namespace send to: the in-cluster form of one alerts[] sink of
// syncd.yaml. Its address (and, for a webhook, the signing key) is in a
// Secret of the same namespace, never in the spec.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=syncd
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
type AlertProvider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AlertProviderSpec `json:"spec"`
	Status AlertStatus       `json:"status,omitempty"`
}

// AlertProviderSpec says what kind of destination a provider is and
// where its address is.
type AlertProviderSpec struct {
	// Type is slack, msteams, discord or webhook; it decides the
	// payload (Block Kit, Adaptive Card, embeds, or signed JSON).
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule=`self in ['slack', 'msteams', 'discord', 'webhook']`,messageExpression=`'"' + self + '" is not a provider type; use slack, msteams, discord or webhook'`
	Type string `json:"type"`
	// SecretRef names a Secret in the provider's namespace: key address
	// holds the webhook URL, and for type webhook key hmacKey the key
	// that signs each payload. Both are read for every message, so a
	// rotated value applies at once.
	SecretRef LocalObjectReference `json:"secretRef"`
}

// Alert sends the events of the Apps it selects, in its own namespace,
// to an AlertProvider of that namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=syncd
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.providerRef.name`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
type Alert struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AlertSpec   `json:"spec"`
	Status AlertStatus `json:"status,omitempty"`
}

// AlertSpec selects Apps and events and names where they go.
type AlertSpec struct {
	// ProviderRef names the AlertProvider, in the Alert's namespace,
	// that the events are sent to.
	ProviderRef ProviderReference `json:"providerRef"`
	// EventSources select the Apps of the Alert's namespace whose
	// events are sent; an App selected by several is sent once.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	EventSources []AppSelector `json:"eventSources"`
	// Events limits the alert to these event types: drift, overlap,
	// conflict, handoff, prune, error, sync. Empty: every event. An
	// error or a drift is followed by its resolved message when it
	// clears.
	// +kubebuilder:validation:MaxItems=7
	// +listType=set
	// +kubebuilder:validation:items:MaxLength=16
	// +kubebuilder:validation:items:XValidation:rule=`self in ['drift', 'overlap', 'conflict', 'handoff', 'prune', 'error', 'sync']`,messageExpression=`'"' + self + '" is not an event; use drift, overlap, conflict, handoff, prune, error or sync'`
	Events []string `json:"events,omitempty"`
	// Suspend stops sending: events of the selected Apps are dropped
	// while it is true. Default false.
	Suspend bool `json:"suspend,omitempty"`
}

// ProviderReference names an AlertProvider in the Alert's namespace.
type ProviderReference struct {
	// Name of the AlertProvider.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// AppSelector selects Apps of the Alert's namespace: by name, every App
// (name "*"), or by labels (with name "*" or no name).
//
// +kubebuilder:validation:XValidation:rule=`has(self.name) || has(self.matchLabels)`,message=`the event source selects nothing; set name (an App's name, or * for every App of the namespace) or matchLabels`
// +kubebuilder:validation:XValidation:rule=`!has(self.matchLabels) || !has(self.name) || self.name == '*'`,message=`name and matchLabels are both set; matchLabels selects among every App (name: * or no name), so drop one`
type AppSelector struct {
	// Kind of the objects selected; App, the only kind that sends
	// events. Default App.
	// +kubebuilder:default=App
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule=`self == 'App'`,messageExpression=`'"' + self + '" is not a kind that sends events; use App'`
	Kind string `json:"kind,omitempty"`
	// Name of an App in the Alert's namespace, or * for every App of
	// the namespace. An Alert never sees Apps of other namespaces.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
	// MatchLabels selects the Apps of the namespace carrying all these
	// labels.
	// +kubebuilder:validation:MaxProperties=32
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// AlertStatus is what the controller last observed of an Alert or an
// AlertProvider.
type AlertStatus struct {
	// ObservedGeneration is the metadata.generation the conditions
	// describe.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are Ready: for an AlertProvider, its Secret holds what
	// its type needs and its address is one syncd may reach; for an
	// Alert, its provider is Ready too and it is not suspended. Never
	// holds a Secret's value.
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
