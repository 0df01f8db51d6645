package faultproxy

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"
)

// errStreamClosed ends a stream that Cut or Expire closed: the reverse proxy aborts the
// response, so the client sees its connection drop as after an API server restart.
var errStreamClosed = errors.New("faultproxy: stream closed by Cut or Expire")

// chunk is one read from the API server and when it arrived.
type chunk struct {
	data []byte
	at   time.Time
}

// stream is the body of a list or watch response on its way to the client. A pump goroutine
// reads the API server's bytes as they come; Read hands them on unless the resource's fault
// says to hold them. It never parses what it carries.
type stream struct {
	ctx      context.Context // the request's; done when the client leaves or the proxy closes
	cancel   context.CancelFunc
	faults   *faults
	resource string
	epoch    uint64 // the resource's epoch when the request was admitted
	delayed  bool   // watch streams honour Delay chunk by chunk; lists were delayed before
	upstream io.ReadCloser
	done     chan struct{} // closed when the pump has stopped

	mu      sync.Mutex
	queue   []chunk
	err     error         // the API server's last read error (io.EOF at the end)
	arrived chan struct{} // closed and replaced when the pump adds data or an error
	closed  bool
}

func newStream(ctx context.Context, cancel context.CancelFunc, f *faults, resource string, epoch uint64, delayed bool, upstream io.ReadCloser) *stream {
	s := &stream{
		ctx: ctx, cancel: cancel, faults: f, resource: resource, epoch: epoch, delayed: delayed,
		upstream: upstream, done: make(chan struct{}), arrived: make(chan struct{}),
	}
	go s.pump()
	return s
}

// pump reads the API server's response into the queue until it ends or fails. Closing the
// upstream body or cancelling the request's context stops it.
func (s *stream) pump() {
	defer close(s.done)
	buf := make([]byte, 32<<10)
	for {
		n, err := s.upstream.Read(buf)
		s.mu.Lock()
		if n > 0 && !s.closed {
			s.queue = append(s.queue, chunk{data: append([]byte(nil), buf[:n]...), at: time.Now()})
		}
		if err != nil {
			s.err = err
		}
		close(s.arrived)
		s.arrived = make(chan struct{})
		s.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// Read returns the next held bytes once the resource's fault lets them through.
func (s *stream) Read(p []byte) (int, error) {
	for {
		f, changed := s.faults.get(s.resource)
		if f.epoch != s.epoch {
			s.drop()
			return 0, errStreamClosed
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return 0, errStreamClosed
		}
		var wake <-chan struct{}
		var timer *time.Timer
		switch {
		case f.frozen:
			// hold everything, even the end of the stream
		case len(s.queue) == 0 && s.err != nil:
			err := s.err
			s.mu.Unlock()
			return 0, err
		case len(s.queue) == 0:
			wake = s.arrived
		case s.delayed && f.delay > 0 && time.Until(s.queue[0].at.Add(f.delay)) > 0:
			timer = time.NewTimer(time.Until(s.queue[0].at.Add(f.delay)))
		default:
			n := copy(p, s.queue[0].data)
			if s.queue[0].data = s.queue[0].data[n:]; len(s.queue[0].data) == 0 {
				s.queue[0] = chunk{}
				s.queue = s.queue[1:]
			}
			s.mu.Unlock()
			return n, nil
		}
		s.mu.Unlock()
		var fire <-chan time.Time
		if timer != nil {
			fire = timer.C
		}
		select {
		case <-s.ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			s.drop()
			return 0, s.ctx.Err()
		case <-changed:
		case <-wake:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// drop forgets the held data: a closed stream never delivers it.
func (s *stream) drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = nil
}

// Close stops the stream and its pump; the reverse proxy calls it when the response ends.
// Cancelling the upstream request first makes sure a pump blocked in Read returns.
func (s *stream) Close() error {
	s.mu.Lock()
	s.closed = true
	s.queue = nil
	s.mu.Unlock()
	s.cancel()
	return s.upstream.Close()
}
