package faultproxy

import (
	"encoding/json"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// writeStatus answers a request the way kube-apiserver answers a failure: a JSON
// metav1.Status, so client-go turns it into an API error (apierrors.IsResourceExpired,
// IsServiceUnavailable) exactly as it would for the real server.
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, message string) {
	body, err := json.Marshal(&metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  message,
		Reason:   reason,
		Code:     int32(code),
	})
	if err != nil { // a fixed struct of strings always marshals; keep a body anyway
		body = []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
