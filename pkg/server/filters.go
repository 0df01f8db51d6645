package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"
)

// secureHandler puts handler behind kube-controller-manager's handler chain
// (k8s.io/controller-manager/app BuildHandlerChain), outermost first: panic recovery,
// request logging, Cache-Control, authentication (401 without valid credentials), then
// authorization (403 unless allowed; 500 when no authorizer could answer).
func secureHandler(handler http.Handler, authn authenticator.Request, authz authorizer.Authorizer) http.Handler {
	h := withAuthorization(handler, authz)
	h = withAuthentication(h, authn)
	h = withCacheControl(h)
	h = withLogging(h)
	return withPanicRecovery(h)
}

// withAuthentication answers 401 unless authn finds the request's user, and otherwise passes
// it on with the user in its context and without its Authorization header.
func withAuthentication(next http.Handler, authn authenticator.Request) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		resp, ok, err := authn.AuthenticateRequest(req)
		if err != nil || !ok {
			if err != nil {
				klog.FromContext(req.Context()).Error(err, "Unable to authenticate the request", "path", req.URL.Path)
			}
			writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
			return
		}
		req.Header.Del("Authorization")
		next.ServeHTTP(w, req.WithContext(genericrequest.WithUser(req.Context(), resp.User)))
	})
}

// withAuthorization lets a request through only if authz allows its user the request's verb
// (the HTTP method in lower case, as for every non-resource URL) on its path.
func withAuthorization(next http.Handler, authz authorizer.Authorizer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx := req.Context()
		u, ok := genericrequest.UserFrom(ctx)
		if !ok {
			writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "no user found for the request")
			return
		}
		attrs := authorizer.AttributesRecord{User: u, Verb: strings.ToLower(req.Method), Path: req.URL.Path}
		decision, reason, err := authz.Authorize(ctx, attrs)
		if decision == authorizer.DecisionAllow {
			next.ServeHTTP(w, req.WithContext(withAuthorizer(ctx, authz)))
			return
		}
		if err != nil {
			writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError,
				fmt.Sprintf("Internal Server Error: %q: %v", req.URL.Path, err))
			return
		}
		msg := fmt.Sprintf("forbidden: User %q cannot %s path %q", u.GetName(), attrs.Verb, attrs.Path)
		if reason != "" {
			msg += ": " + reason
		}
		klog.FromContext(ctx).V(4).Info("Forbidden", "path", attrs.Path, "user", u.GetName(), "reason", reason)
		writeStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden, msg)
	})
}

// writeStatus answers with a Kubernetes Status, as the API server and
// kube-controller-manager do.
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	body, _ := json.Marshal(metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: msg, Reason: reason, Code: int32(code),
	})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(append(body, '\n'))
}

// withCacheControl keeps clients and proxies from caching what needs authorization.
func withCacheControl(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if w.Header().Get("Cache-Control") == "" {
			w.Header().Set("Cache-Control", "no-cache, private")
		}
		next.ServeHTTP(w, req)
	})
}

// statusRecorder remembers the status a handler wrote, for the request log.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// withLogging logs every request at V(3), as k8s.io/apiserver's httplog does.
func withLogging(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		logger := klog.FromContext(req.Context())
		if !logger.V(3).Enabled() {
			next.ServeHTTP(w, req)
			return
		}
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, req)
		logger.V(3).Info("HTTP", "verb", req.Method, "URI", req.RequestURI, "latency", time.Since(start),
			"userAgent", req.UserAgent(), "srcIP", req.RemoteAddr, "resp", rec.status)
	})
}

// withPanicRecovery answers 500 when a handler panics, and logs it, instead of dropping the
// connection; http.ErrAbortHandler still aborts.
func withPanicRecovery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		defer func() {
			r := recover()
			if r == nil {
				return
			}
			if err, ok := r.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(r)
			}
			klog.FromContext(req.Context()).Error(fmt.Errorf("%v", r), "A handler panicked", "verb", req.Method, "path", req.URL.Path)
			writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError,
				"This request caused the server to panic. Look in the logs for details.")
		}()
		next.ServeHTTP(w, req)
	})
}
