package attachstate

import (
	"time"

	"github.com/cenkalti/backoff/v4"
)

// PairKey names a (node, pod, volume) pair the controller may hold.
type PairKey struct{ Node, Pod, Volume string }

// EventKey names the Events of one pod (or the node) with one reason.
type EventKey struct{ Pod, Reason string }

type heldPair struct {
	reason    string
	retries   int
	nextRetry time.Time
	backoff   *backoff.ExponentialBackOff
}

// Hold records that a pair is held and returns its retry count and next retry time. The
// backoff advances only when a scheduled retry is due, not on every event that re-decides
// the node.
func (m *State) Hold(key PairKey, reason string, now time.Time) (int, time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.held[key.Node][key]
	if h == nil {
		h = &heldPair{backoff: m.opts.NewBackOff()}
		h.nextRetry = now.Add(h.backoff.NextBackOff())
		if m.held[key.Node] == nil {
			m.held[key.Node] = map[PairKey]*heldPair{}
		}
		m.held[key.Node][key] = h
	} else if !now.Before(h.nextRetry) {
		h.retries++
		h.nextRetry = now.Add(h.backoff.NextBackOff())
	}
	h.reason = reason
	return h.retries, h.nextRetry
}

// EventChanged records message as the last Event of the node's key and reports whether it
// differs from the one recorded before: one Event per pod and reason, not one per retry.
func (m *State) EventChanged(node string, key EventKey, message string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.events[node][key] == message {
		return false
	}
	if m.events[node] == nil {
		m.events[node] = map[EventKey]string{}
	}
	m.events[node][key] = message
	return true
}

// ForgetUnrenewed drops the holds, waits and Event memory of the node that its last
// reconcile did not renew (pairs no longer held, volumes no longer waited for, conditions
// cleared, pods gone), so a pair held again later starts a fresh backoff and gets a fresh
// Event, and nothing outlives its pod.
func (m *State) ForgetUnrenewed(node string, held map[PairKey]bool, waitingFor map[string]bool, events map[EventKey]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pruneWaitersLocked(node, waitingFor)
	for k := range m.held[node] {
		if !held[k] {
			delete(m.held[node], k)
		}
	}
	if len(m.held[node]) == 0 {
		delete(m.held, node)
	}
	for k := range m.events[node] {
		if !events[k] {
			delete(m.events[node], k)
		}
	}
	if len(m.events[node]) == 0 {
		delete(m.events, node)
	}
}
