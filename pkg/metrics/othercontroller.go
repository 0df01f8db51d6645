package metrics

import (
	k8smetrics "k8s.io/component-base/metrics"
)

// otherControllerCollector exports what the leader saw of another attach/detach controller
// (package adc's OtherController), computed at scrape time: an alert on
// adc_other_controller_fenced == 1 says adc writes nothing, and why is in the writes' labels.
type otherControllerCollector struct {
	k8smetrics.BaseStableCollector
	source         *viewSource
	fenced, writes *k8smetrics.Desc
}

func newOtherControllerCollector(s *viewSource) *otherControllerCollector {
	return &otherControllerCollector{
		source: s,
		fenced: k8smetrics.NewDesc(OtherControllerFencedName,
			"1 while adc attaches, detaches and writes node status not at all because another attach/detach controller writes what adc owns (Event reason OtherAttachDetachController), else 0.",
			nil, nil, k8smetrics.ALPHA, ""),
		writes: k8smetrics.NewDesc(OtherControllerWritesName,
			"Writes of another attach/detach controller adc saw since it started leading, by field manager and object (Node/status.volumesAttached, VolumeAttachment).",
			[]string{"manager", "object"}, nil, k8smetrics.ALPHA, ""),
	}
}

// DescribeWithStability implements k8smetrics.StableCollector.
func (c *otherControllerCollector) DescribeWithStability(ch chan<- *k8smetrics.Desc) {
	ch <- c.fenced
	ch <- c.writes
}

// CollectWithStability implements k8smetrics.StableCollector.
func (c *otherControllerCollector) CollectWithStability(ch chan<- k8smetrics.Metric) {
	view, ok := c.source.view()
	if !ok {
		return
	}
	o := view.OtherController()
	fenced := 0.0
	if o.Fenced {
		fenced = 1
	}
	ch <- k8smetrics.NewLazyConstMetric(c.fenced, k8smetrics.GaugeValue, fenced)
	for _, w := range o.Writes {
		ch <- k8smetrics.NewLazyConstMetric(c.writes, k8smetrics.CounterValue, float64(w.Count), w.Manager, w.Object)
	}
}
