package chaos

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// Fault is what a Proxy does to the traffic it forwards. The zero value forwards
// everything at once.
type Fault struct {
	// Delay holds every chunk of bytes this long before forwarding it, in both
	// directions; order is kept.
	Delay time.Duration
	// Stall stops forwarding in both directions, as a network partition does: bytes wait
	// in the proxy (and the kernel's buffers) and flow again, complete and in order, when
	// the stall is lifted, unless a side gives up and closes first. Nothing is ever
	// dropped from the middle of a stream, which TCP would never do either.
	Stall bool
	// ResetChance is the chance, per chunk forwarded, that the proxy forwards only the
	// first half of the chunk and then resets both sides (TCP RST): a connection cut in
	// the middle of a command or a reply.
	ResetChance float64
	// Refuse resets every new connection as soon as it is accepted.
	Refuse bool
}

// Proxy is a TCP proxy on a loopback port in front of one target address, whose faults
// can be changed at any time; a change applies to connections already open. Clients
// point at Addr instead of the target.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	fault   Fault
	healed  chan struct{} // closed when a stall is lifted; replaced when one starts
	conns   map[*proxyConn]struct{}
	closed  bool
	resets  int // connections reset by the proxy
	handled int // connections accepted
	wg      sync.WaitGroup
}

// proxyConn is one client connection and its connection to the target.
type proxyConn struct {
	client, server net.Conn
	once           sync.Once
}

// NewProxy listens on a free loopback port and forwards each connection to target.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[*proxyConn]struct{}{}, healed: make(chan struct{})}
	close(p.healed)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's address, "127.0.0.1:port".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetFault replaces the proxy's fault.
func (p *Proxy) SetFault(f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	wasStalled := p.fault.Stall
	p.fault = f
	switch {
	case f.Stall && !wasStalled:
		p.healed = make(chan struct{})
	case !f.Stall && wasStalled:
		close(p.healed)
	}
}

// Heal lifts every fault.
func (p *Proxy) Heal() { p.SetFault(Fault{}) }

// ResetAll resets every open connection (TCP RST to both sides) and returns how many it
// reset. Connections opened afterwards are forwarded as the current fault says.
func (p *Proxy) ResetAll() int {
	p.mu.Lock()
	conns := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		p.reset(c)
	}
	return len(conns)
}

// Stats returns how many connections the proxy accepted and how many it reset.
func (p *Proxy) Stats() (accepted, reset int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.handled, p.resets
}

// Close stops accepting, closes every connection and waits for the proxy's goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	if p.fault.Stall {
		close(p.healed)
		p.fault.Stall = false
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.ResetAll()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		p.handled++
		refuse, closed := p.fault.Refuse, p.closed
		p.mu.Unlock()
		if refuse || closed {
			// Counted first, so a caller that saw the reset also sees it counted.
			p.count()
			resetConn(c)
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) count() {
	p.mu.Lock()
	p.resets++
	p.mu.Unlock()
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	server, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		// The target is down: the client sees its connection reset, as it would see
		// a refused dial without the proxy.
		resetConn(client)
		return
	}
	pc := &proxyConn{client: client, server: server}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		resetConn(client)
		resetConn(server)
		return
	}
	p.conns[pc] = struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { p.pipe(pc, server, client); done <- struct{}{} }()
	p.pipe(pc, client, server)
	<-done
	p.closeBoth(pc)
	p.mu.Lock()
	delete(p.conns, pc)
	p.mu.Unlock()
}

// pipe copies src to dst applying the current fault to each chunk. At the end of src it
// passes the end on and leaves the other way running; when either side fails it closes
// both.
func (p *Proxy) pipe(pc *proxyConn, dst, src net.Conn) {
	halfClosed := false
	defer func() {
		if !halfClosed {
			p.closeBoth(pc)
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			f, healed := p.current()
			if f.Stall {
				<-healed
				f, _ = p.current()
			}
			if f.Delay > 0 {
				time.Sleep(f.Delay) // the fault being injected: this chunk is late
			}
			if f.ResetChance > 0 && rand.Float64() < f.ResetChance {
				_, _ = dst.Write(buf[:n/2])
				p.reset(pc)
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				// Half-close: pass the end of the stream on, let the other way finish.
				if tc, ok := dst.(*net.TCPConn); ok && tc.CloseWrite() == nil {
					halfClosed = true
				}
			}
			return
		}
	}
}

func (p *Proxy) current() (Fault, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fault, p.healed
}

func (p *Proxy) reset(pc *proxyConn) {
	pc.once.Do(func() {
		// Counted first, so a caller that saw the reset also sees it counted.
		p.count()
		resetConn(pc.client)
		resetConn(pc.server)
	})
}

func (p *Proxy) closeBoth(pc *proxyConn) {
	// A clean end (EOF one way, then the other) closes normally; anything else has
	// already reset the pair and this is a no-op.
	pc.once.Do(func() {
		_ = pc.client.Close()
		_ = pc.server.Close()
	})
}

// resetConn closes c with an RST instead of a FIN: SO_LINGER 0 drops unsent data.
func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}
