package litellm

import "strings"

// provider is what a LiteLLM provider prefix maps to.
type provider struct {
	id      string // Switchyard provider id
	dialect string // openai | anthropic
	baseURL string // default base URL; "" requires api_base
	keyEnv  string // LiteLLM's default API key variable
	// apiSuffix is appended to api_base (Ollama: /v1).
	apiSuffix string
	// platform is the service behind the dialect (config.Deployment.Platform) when it is not
	// the dialect's own API: bedrock, vertex or azure; "" otherwise.
	platform string
}

// providers are the LiteLLM prefixes with an OpenAI- or Anthropic-compatible API that takes a
// bearer (or x-api-key) credential.
var providers = map[string]provider{
	"openai":       {"openai", "openai", "https://api.openai.com/v1", "OPENAI_API_KEY", "", ""},
	"anthropic":    {"anthropic", "anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY", "", ""},
	"azure":        {"azure", "openai", "", "AZURE_API_KEY", "", "azure"},
	"bedrock":      {"bedrock", "anthropic", "", "", "", "bedrock"},
	"vertex_ai":    {"vertex", "anthropic", "", "", "", "vertex"},
	"gemini":       {"gemini", "openai", "https://generativelanguage.googleapis.com/v1beta/openai", "GEMINI_API_KEY", "", ""},
	"groq":         {"groq", "openai", "https://api.groq.com/openai/v1", "GROQ_API_KEY", "", ""},
	"mistral":      {"mistral", "openai", "https://api.mistral.ai/v1", "MISTRAL_API_KEY", "", ""},
	"deepseek":     {"deepseek", "openai", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY", "", ""},
	"together_ai":  {"together", "openai", "https://api.together.xyz/v1", "TOGETHERAI_API_KEY", "", ""},
	"fireworks_ai": {"fireworks", "openai", "https://api.fireworks.ai/inference/v1", "FIREWORKS_AI_API_KEY", "", ""},
	"openrouter":   {"openrouter", "openai", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", "", ""},
	"xai":          {"xai", "openai", "https://api.x.ai/v1", "XAI_API_KEY", "", ""},
	"perplexity":   {"perplexity", "openai", "https://api.perplexity.ai", "PERPLEXITYAI_API_KEY", "", ""},
	"hosted_vllm":  {"vllm", "openai", "", "", "", ""},
	"ollama":       {"ollama", "openai", "http://localhost:11434/v1", "", "/v1", ""},
	"ollama_chat":  {"ollama", "openai", "http://localhost:11434/v1", "", "/v1", ""},
	"lm_studio":    {"lmstudio", "openai", "http://localhost:1234/v1", "", "", ""},
}

// unsupported are prefixes whose API Switchyard cannot call, with the reason.
var unsupported = map[string]string{
	"sagemaker":              "AWS SageMaker needs SigV4 request signing, which Switchyard does not do",
	"vertex_ai_beta":         "vertex_ai_beta is not mapped; write vertex_ai/ for Claude on Vertex AI",
	"cohere":                 "Cohere's API is neither the OpenAI nor the Anthropic wire format",
	"cohere_chat":            "Cohere's API is neither the OpenAI nor the Anthropic wire format",
	"replicate":              "Replicate's prediction API is neither the OpenAI nor the Anthropic wire format",
	"huggingface":            "the Hugging Face inference API is not mapped; give its OpenAI-compatible endpoint as openai/ with api_base",
	"watsonx":                "watsonx needs IBM IAM tokens, which Switchyard does not mint",
	"azure_ai":               "Azure AI model inference is not mapped; give its OpenAI-compatible endpoint as openai/ with api_base",
	"cloudflare":             "Cloudflare Workers AI is not mapped; give its OpenAI-compatible endpoint as openai/ with api_base",
	"databricks":             "Databricks serving endpoints are not mapped; give the OpenAI-compatible endpoint as openai/ with api_base",
	"dashscope":              "DashScope is not mapped; give its OpenAI-compatible endpoint as openai/ with api_base",
	"text-completion-openai": "the legacy completions API (/v1/completions) is not a Switchyard surface",
}

// inferProvider is LiteLLM's provider for a model written without a prefix.
func inferProvider(model string) string {
	switch {
	case strings.HasPrefix(model, "gpt-"), strings.HasPrefix(model, "o1"), strings.HasPrefix(model, "o3"),
		strings.HasPrefix(model, "o4"), strings.HasPrefix(model, "text-embedding-"), strings.HasPrefix(model, "chatgpt-"),
		strings.HasPrefix(model, "dall-e-"): // gpt-image-1 and its kin are gpt-
		return "openai"
	case strings.HasPrefix(model, "claude-"):
		return "anthropic"
	}
	return ""
}

// platformSettings are a deployment's platform and its settings block (contract.md round 3),
// zero for a dialect's own API.
type platformSettings struct {
	platform string
	aws      *outAWS
	vertex   *outVertex
	azure    *outAzure
}

// key identifies the settings within a deployment group.
func (ps platformSettings) key() string {
	k := ps.platform
	if ps.aws != nil {
		k += "\x00" + ps.aws.Region + "\x00" + ps.aws.AccessKeyID + "\x00" + ps.aws.SecretAccessKey + "\x00" + ps.aws.SessionToken + "\x00" + ps.aws.Profile
	}
	if ps.vertex != nil {
		k += "\x00" + ps.vertex.Project + "\x00" + ps.vertex.Location + "\x00" + ps.vertex.CredentialsFile
	}
	if ps.azure != nil {
		k += "\x00" + ps.azure.APIVersion
	}
	return k
}

// platform maps the model and the platform parameters of a bedrock/, vertex_ai/ or azure/
// entry: Bedrock serves Anthropic models through InvokeModel (LiteLLM's converse/ and invoke/
// routes alike), Vertex AI serves Claude through rawPredict, Azure takes api_version. It
// returns the upstream model and the settings, or false (with a note) when the entry is
// skipped.
func (c *converter) platform(path string, p provider, upstream string, lp map[string]any) (string, platformSettings, bool) {
	ps := platformSettings{platform: p.platform}
	lpPath := path + ".litellm_params."
	switch p.platform {
	case "bedrock":
		for _, route := range []string{"converse/", "invoke/"} {
			upstream = strings.TrimPrefix(upstream, route)
		}
		if !strings.Contains(upstream, "anthropic.") {
			c.note(path, "bedrock/%s: Switchyard calls Anthropic models on Bedrock (InvokeModel with the Messages body); other Bedrock models are not mapped; skipped", upstream)
			return "", ps, false
		}
		ps.aws = &outAWS{Region: envRef(str(lp["aws_region_name"])), AccessKeyID: envRef(str(lp["aws_access_key_id"])),
			SecretAccessKey: envRef(str(lp["aws_secret_access_key"])), SessionToken: envRef(str(lp["aws_session_token"])),
			Profile: envRef(str(lp["aws_profile_name"]))}
		if ps.aws.Region == "" {
			ps.aws.Region = "${AWS_REGION_NAME}"
			c.note(lpPath+"aws_region_name", "missing: the output reads ${AWS_REGION_NAME}, as LiteLLM does")
		}
		if ps.aws.AccessKeyID == "" {
			c.note(lpPath+"aws_access_key_id", "absent: the AWS SDK's default credential chain applies (environment, shared config and profile, web identity, container and instance roles)")
		}
	case "vertex":
		if !strings.HasPrefix(upstream, "claude-") {
			c.note(path, "vertex_ai/%s: Switchyard calls Claude on Vertex AI; for Gemini use gemini/ (the Gemini API's OpenAI-compatible endpoint); skipped", upstream)
			return "", ps, false
		}
		ps.vertex = &outVertex{Project: envRef(str(lp["vertex_project"])), Location: envRef(str(lp["vertex_location"]))}
		if ps.vertex.Project == "" {
			ps.vertex.Project = "${VERTEXAI_PROJECT}"
			c.note(lpPath+"vertex_project", "missing: the output reads ${VERTEXAI_PROJECT}, as LiteLLM does")
		}
		if ps.vertex.Location == "" {
			ps.vertex.Location = "${VERTEXAI_LOCATION}"
			c.note(lpPath+"vertex_location", "missing: the output reads ${VERTEXAI_LOCATION}, as LiteLLM does")
		}
		switch cred := str(lp["vertex_credentials"]); {
		case cred == "":
			c.note(lpPath+"vertex_credentials", "absent: Google's Application Default Credentials apply")
		case strings.HasPrefix(strings.TrimSpace(cred), "{"):
			c.note(lpPath+"vertex_credentials", "inline service-account JSON is not copied: save it to a file and set vertex.credentials_file")
		default:
			ps.vertex.CredentialsFile = envRef(cred)
		}
	case "azure":
		if v := str(lp["api_version"]); v != "" {
			ps.azure = &outAzure{APIVersion: envRef(v)}
		}
	}
	return upstream, ps, true
}
