package sdk

import (
	"encoding/json"
	"time"

	"github.com/openhuman/openhuman-host/sdk/internal/providerv1"
)

// Converters between the Go-native types of this package and the generated
// protobuf types. They are total: unknown enum values map to the zero value
// and are rejected by the host's validation, never here.

func classToProto(c PolicyClass) providerv1.PolicyClass {
	switch c {
	case ClassRead:
		return providerv1.PolicyClass_POLICY_CLASS_READ
	case ClassAct:
		return providerv1.PolicyClass_POLICY_CLASS_ACT
	}
	return providerv1.PolicyClass_POLICY_CLASS_UNSPECIFIED
}

func classFromProto(c providerv1.PolicyClass) PolicyClass {
	switch c {
	case providerv1.PolicyClass_POLICY_CLASS_READ:
		return ClassRead
	case providerv1.PolicyClass_POLICY_CLASS_ACT:
		return ClassAct
	}
	return ""
}

func catalogToProto(c *Catalog) *providerv1.DescribeResponse {
	out := &providerv1.DescribeResponse{Name: c.Name, Version: c.Version, Instructions: c.Instructions}
	for _, t := range c.Tools {
		out.Tools = append(out.Tools, toolToProto(t))
	}
	for _, r := range c.Resources {
		out.Resources = append(out.Resources, &providerv1.ResourceSpec{
			Uri: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MimeType: r.MIMEType, Size: r.Size,
		})
	}
	for _, r := range c.ResourceTemplates {
		out.ResourceTemplates = append(out.ResourceTemplates, &providerv1.ResourceTemplateSpec{
			UriTemplate: r.URITemplate, Name: r.Name, Title: r.Title, Description: r.Description, MimeType: r.MIMEType,
		})
	}
	for _, p := range c.Prompts {
		ps := &providerv1.PromptSpec{Name: p.Name, Title: p.Title, Description: p.Description}
		for _, a := range p.Arguments {
			ps.Arguments = append(ps.Arguments, &providerv1.PromptArgument{Name: a.Name, Description: a.Description, Required: a.Required})
		}
		out.Prompts = append(out.Prompts, ps)
	}
	return out
}

func catalogFromProto(in *providerv1.DescribeResponse) *Catalog {
	c := &Catalog{Name: in.GetName(), Version: in.GetVersion(), Instructions: in.GetInstructions()}
	for _, t := range in.GetTools() {
		c.Tools = append(c.Tools, toolFromProto(t))
	}
	for _, r := range in.GetResources() {
		c.Resources = append(c.Resources, Resource{
			URI: r.GetUri(), Name: r.GetName(), Title: r.GetTitle(), Description: r.GetDescription(), MIMEType: r.GetMimeType(), Size: r.GetSize(),
		})
	}
	for _, r := range in.GetResourceTemplates() {
		c.ResourceTemplates = append(c.ResourceTemplates, ResourceTemplate{
			URITemplate: r.GetUriTemplate(), Name: r.GetName(), Title: r.GetTitle(), Description: r.GetDescription(), MIMEType: r.GetMimeType(),
		})
	}
	for _, p := range in.GetPrompts() {
		pr := Prompt{Name: p.GetName(), Title: p.GetTitle(), Description: p.GetDescription()}
		for _, a := range p.GetArguments() {
			pr.Arguments = append(pr.Arguments, PromptArgument{Name: a.GetName(), Description: a.GetDescription(), Required: a.GetRequired()})
		}
		c.Prompts = append(c.Prompts, pr)
	}
	return c
}

func toolToProto(t Tool) *providerv1.ToolSpec {
	return &providerv1.ToolSpec{
		Name:             t.Name,
		Title:            t.Title,
		Description:      t.Description,
		InputSchemaJson:  t.InputSchema,
		OutputSchemaJson: t.OutputSchema,
		Annotations: &providerv1.ToolAnnotations{
			Title:           t.Annotations.Title,
			ReadOnlyHint:    t.Annotations.ReadOnlyHint,
			DestructiveHint: t.Annotations.DestructiveHint,
			IdempotentHint:  t.Annotations.IdempotentHint,
			OpenWorldHint:   t.Annotations.OpenWorldHint,
		},
		PolicyClass: classToProto(t.Class),
		TimeoutMs:   uint32(t.Timeout / time.Millisecond),
	}
}

func toolFromProto(t *providerv1.ToolSpec) Tool {
	a := t.GetAnnotations()
	return Tool{
		Name:         t.GetName(),
		Title:        t.GetTitle(),
		Description:  t.GetDescription(),
		InputSchema:  rawOrNil(t.GetInputSchemaJson()),
		OutputSchema: rawOrNil(t.GetOutputSchemaJson()),
		Annotations: Annotations{
			Title:           a.GetTitle(),
			ReadOnlyHint:    a.ReadOnlyHint,
			DestructiveHint: a.DestructiveHint,
			IdempotentHint:  a.IdempotentHint,
			OpenWorldHint:   a.OpenWorldHint,
		},
		Class:   classFromProto(t.GetPolicyClass()),
		Timeout: time.Duration(t.GetTimeoutMs()) * time.Millisecond,
	}
}

func samplingRequestToProto(r *CreateMessageRequest) *providerv1.HostCreateMessageRequest {
	out := &providerv1.HostCreateMessageRequest{
		Caller:       callerToProto(r.Caller),
		SystemPrompt: r.SystemPrompt,
		Temperature:  r.Temperature,
		MaxTokens:    r.MaxTokens,
		ModelHint:    r.ModelHint,
	}
	for _, m := range r.Messages {
		out.Messages = append(out.Messages, &providerv1.SamplingMessage{Role: m.Role, Content: samplingContentToProto(m.Content)})
	}
	for _, t := range r.Tools {
		out.Tools = append(out.Tools, &providerv1.SamplingTool{Name: t.Name, Description: t.Description, InputSchemaJson: t.InputSchema})
	}
	return out
}

func samplingRequestFromProto(r *providerv1.HostCreateMessageRequest) *CreateMessageRequest {
	out := &CreateMessageRequest{
		Caller:       callerFromProto(r.GetCaller()),
		SystemPrompt: r.GetSystemPrompt(),
		Temperature:  r.Temperature,
		MaxTokens:    r.GetMaxTokens(),
		ModelHint:    r.GetModelHint(),
	}
	for _, m := range r.GetMessages() {
		out.Messages = append(out.Messages, SamplingMessage{Role: m.GetRole(), Content: samplingContentFromProto(m.GetContent())})
	}
	for _, t := range r.GetTools() {
		out.Tools = append(out.Tools, SamplingTool{Name: t.GetName(), Description: t.GetDescription(), InputSchema: rawOrNil(t.GetInputSchemaJson())})
	}
	return out
}

func samplingContentToProto(cs []SamplingContent) []*providerv1.SamplingContent {
	out := make([]*providerv1.SamplingContent, 0, len(cs))
	for _, c := range cs {
		out = append(out, &providerv1.SamplingContent{
			Type: c.Type, Text: c.Text, ToolUseId: c.ToolUseID, ToolName: c.ToolName, InputJson: c.Input, IsError: c.IsError,
		})
	}
	return out
}

func samplingContentFromProto(cs []*providerv1.SamplingContent) []SamplingContent {
	out := make([]SamplingContent, 0, len(cs))
	for _, c := range cs {
		out = append(out, SamplingContent{
			Type: c.GetType(), Text: c.GetText(), ToolUseID: c.GetToolUseId(), ToolName: c.GetToolName(),
			Input: rawOrNil(c.GetInputJson()), IsError: c.GetIsError(),
		})
	}
	return out
}

func callerToProto(c Caller) *providerv1.Caller {
	return &providerv1.Caller{
		SourceType:             c.SourceType,
		SessionHash:            c.SessionHash,
		ClientName:             c.ClientName,
		ClientVersion:          c.ClientVersion,
		Depth:                  uint32(max(c.Depth, 0)),
		ProgressTokenJson:      c.ProgressToken,
		CallToken:              c.CallToken,
		SessionToken:           c.SessionToken,
		ProtocolVersion:        c.ProtocolVersion,
		ClientCapabilitiesJson: c.ClientCapabilities,
		ReadsStructuredContent: c.ReadsStructuredContent,
		Profile:                c.Profile,
	}
}

func callerFromProto(c *providerv1.Caller) Caller {
	return Caller{
		SourceType:         c.GetSourceType(),
		SessionHash:        c.GetSessionHash(),
		ClientName:         c.GetClientName(),
		ClientVersion:      c.GetClientVersion(),
		Depth:              int(c.GetDepth()),
		ProgressToken:      rawOrNil(c.GetProgressTokenJson()),
		CallToken:          c.GetCallToken(),
		SessionToken:       c.GetSessionToken(),
		ProtocolVersion:    c.GetProtocolVersion(),
		ClientCapabilities: rawOrNil(c.GetClientCapabilitiesJson()),
		// proto3's default: a host that predates the field sends false.
		ReadsStructuredContent: c.GetReadsStructuredContent(),
		Profile:                c.GetProfile(),
	}
}

func resultToProto(r *CallToolResult) *providerv1.CallToolResult {
	out := &providerv1.CallToolResult{StructuredContentJson: r.StructuredContent, IsError: r.IsError,
		InputRequestsJson: r.InputRequests, RequestState: r.RequestState, AuditRef: r.AuditRef}
	for _, c := range r.Content {
		out.Content = append(out.Content, contentToProto(c))
	}
	return out
}

func resultFromProto(r *providerv1.CallToolResult) *CallToolResult {
	out := &CallToolResult{StructuredContent: rawOrNil(r.GetStructuredContentJson()), IsError: r.GetIsError(),
		InputRequests: rawOrNil(r.GetInputRequestsJson()), RequestState: r.GetRequestState(), AuditRef: r.GetAuditRef()}
	for _, c := range r.GetContent() {
		out.Content = append(out.Content, contentFromProto(c))
	}
	return out
}

func contentToProto(c Content) *providerv1.Content {
	return &providerv1.Content{
		Type: c.Type, Text: c.Text, Data: c.Data, MimeType: c.MIMEType, Uri: c.URI, Name: c.Name, Title: c.Title, Description: c.Description,
	}
}

func contentFromProto(c *providerv1.Content) Content {
	return Content{
		Type: c.GetType(), Text: c.GetText(), Data: c.GetData(), MIMEType: c.GetMimeType(), URI: c.GetUri(), Name: c.GetName(), Title: c.GetTitle(), Description: c.GetDescription(),
	}
}

func progressToProto(p Progress) *providerv1.ProgressEvent {
	return &providerv1.ProgressEvent{Progress: p.Progress, Total: p.Total, Message: p.Message}
}

func progressFromProto(p *providerv1.ProgressEvent) Progress {
	return Progress{Progress: p.GetProgress(), Total: p.GetTotal(), Message: p.GetMessage()}
}

func logToProto(m LogMessage) (*providerv1.LogEvent, error) {
	data, err := json.Marshal(m.Data)
	if err != nil {
		return nil, err
	}
	return &providerv1.LogEvent{Level: m.Level, Logger: m.Logger, DataJson: data}, nil
}

func logFromProto(e *providerv1.LogEvent) LogMessage {
	return LogMessage{Level: e.GetLevel(), Logger: e.GetLogger(), Data: json.RawMessage(e.GetDataJson())}
}

func contentsToProto(r *ReadResourceResult) *providerv1.ReadResourceResponse {
	out := &providerv1.ReadResourceResponse{}
	for _, c := range r.Contents {
		out.Contents = append(out.Contents, &providerv1.ResourceContents{Uri: c.URI, MimeType: c.MIMEType, Text: c.Text, Blob: c.Blob})
	}
	return out
}

func contentsFromProto(r *providerv1.ReadResourceResponse) *ReadResourceResult {
	out := &ReadResourceResult{}
	for _, c := range r.GetContents() {
		out.Contents = append(out.Contents, ResourceContents{URI: c.GetUri(), MIMEType: c.GetMimeType(), Text: c.GetText(), Blob: c.GetBlob()})
	}
	return out
}

func rawOrNil(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return json.RawMessage(b)
}
