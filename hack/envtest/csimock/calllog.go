package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// callRecord is one line of the call log. The end-to-end suite reads these to check the
// order of calls (for example NodeUnstageVolume before ControllerUnpublishVolume), so the
// field names are a contract with test/e2e.
type callRecord struct {
	// Time is when the call returned, RFC 3339 with nanoseconds.
	Time time.Time `json:"time"`
	// Start is when the call arrived.
	Start time.Time `json:"start"`
	// Method is the gRPC method without its service, e.g. ControllerPublishVolume, GetInfo.
	Method string `json:"method"`
	// VolumeID is the volume id as the caller sent it (the PV's handle), if the call has one.
	VolumeID string `json:"volumeID,omitempty"`
	// MockVolumeID is the mock's own id the handle was mapped to.
	MockVolumeID string `json:"mockVolumeID,omitempty"`
	// NodeID is the request's node_id (ControllerPublish/Unpublish).
	NodeID string `json:"nodeID,omitempty"`
	// Node is the node whose socket the call came in on; empty on the controller socket.
	Node string `json:"node,omitempty"`
	// Code is the gRPC status code name, OK on success.
	Code string `json:"code"`
	// Error is the status message of a failed call.
	Error string `json:"error,omitempty"`
}

// callLog appends records to a file, one write per record, so a reader never waits for a
// buffer and sees every call that has returned.
type callLog struct {
	mu sync.Mutex
	f  *os.File
}

func openCallLog(path string) (*callLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the call log %s: %w", path, err)
	}
	return &callLog{f: f}, nil
}

func (l *callLog) add(r callRecord) {
	b, err := json.Marshal(r)
	if err != nil {
		return
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.f.Write(b)
}

func (l *callLog) close() { _ = l.f.Close() }
