package policy_test

import (
	"errors"
	"fmt"

	"github.com/openhuman/openhuman-host/host/policy"
)

func ExamplePolicy_Check() {
	limit := 1
	p, err := policy.New(policy.Options{
		Level:             policy.Supervised,
		MaxActionsPerHour: &limit,
		DeniedTools:       []string{"assist.*"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Check("notes_search", policy.Read))
	fmt.Println(p.Check("notes_store", policy.Act))

	for _, tool := range []string{"pages_tag", "assist_run_subagent"} {
		err := p.Check(tool, policy.Act)
		var d *policy.Denial
		if errors.As(err, &d) {
			fmt.Println(errors.Is(err, policy.ErrDenied), "denied:"+d.Reason)
		}
	}
	// Output:
	// <nil>
	// <nil>
	// true denied:budget
	// true denied:denied_tool
}
