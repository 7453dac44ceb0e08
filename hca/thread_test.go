package hca

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hcasim/hcasim/ib"
)

// TestThreadsPostApart: posts on one application thread run one after
// another, host.post_ns each; a QP moved to a thread of its own posts
// beside them (another process, another core).
func TestThreadsPostApart(t *testing.T) {
	cfg := Defaults()
	p := newPair(t, edrLink(), cfg, 4096)
	post := ib.FromNanoseconds(cfg.Host.PostNS) // 60 ns
	a := p.a
	q2 := a.CreateQP(a.AllocPD(), a.CreateCQ(16), a.CreateCQ(16), 4, 4)
	assert.Same(t, p.qa.Thread(), q2.Thread(), "QPs start on the device's main thread")
	// At time 0: two posts on the main thread end at post and 2 × post.
	assert.Equal(t, post, a.cpuPost(p.qa))
	assert.Equal(t, 2*post, a.cpuPost(q2))
	assert.Equal(t, 2*post, a.CPUFreeAt())
	// On a thread of its own, q2's next post ends post after now, while
	// the main thread is still busy until 2 × post.
	q2.SetThread(a.NewThread())
	assert.Equal(t, post, a.cpuPost(q2))
	assert.Equal(t, 3*post, a.cpuPost(p.qa))
	assert.Equal(t, post, q2.Thread().FreeAt(0))
}
