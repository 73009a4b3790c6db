package admission_test

import (
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/admission/admissiontest"
)

// TestMemory runs the behaviour suite on the in-memory store.
func TestMemory(t *testing.T) {
	admissiontest.Run(t, admissiontest.Backend{
		Open: func(_ *testing.T, now func() time.Time, seeder admission.Seeder) admission.Store {
			return admission.NewMemory(now, seeder)
		},
	})
}

// TestReserveFormula: contract.md "Billing": input estimate x input price + (max_tokens, else
// the model's max_output_tokens, else 4096) x output price, in whole micro-USD rounded up.
func TestReserveFormula(t *testing.T) {
	for _, tc := range []struct {
		in, maxTokens, modelMax int64
		pin, pout               float64
		want                    int64
	}{
		{1000, 100, 64000, 3, 15, 1000*3 + 100*15},
		{1000, 0, 64000, 3, 15, 1000*3 + 64000*15},
		{1000, 0, 0, 3, 15, 1000*3 + 4096*15},
		{1000, 0, 0, 0.15, 0.6, 150 + 2458}, // 4096 x 0.6 = 2457.6 -> 2458
		{0, 0, 0, 0, 0, 0},
		{10, 10, 0, -1, 1e300, 1<<63 - 1},
	} {
		got := admission.CostMicroUSD(tc.in, admission.OutputTokens(tc.maxTokens, tc.modelMax), tc.pin, tc.pout)
		if got != tc.want {
			t.Errorf("admission.CostMicroUSD(%d in, max %d/%d, %v/%v) = %d, want %d", tc.in, tc.maxTokens, tc.modelMax, tc.pin, tc.pout, got, tc.want)
		}
	}
	if admission.MicroUSD(0.0012345) != 1235 || admission.MicroUSD(-1) != 0 {
		t.Errorf("MicroUSD: %d %d", admission.MicroUSD(0.0012345), admission.MicroUSD(-1))
	}
}

func TestParsePeriod(t *testing.T) {
	for s, want := range map[string]admission.Period{"": admission.PeriodMonth, "month": admission.PeriodMonth, "day": admission.PeriodDay, "total": admission.PeriodTotal} {
		if p, err := admission.ParsePeriod(s); err != nil || p != want {
			t.Errorf("admission.ParsePeriod(%q) = %v, %v", s, p, err)
		}
	}
	if _, err := admission.ParsePeriod("week"); err == nil {
		t.Error("week accepted")
	}
}
