" The agent panel's transcript (lua/gemini_companion/agent/transcript.lua):
" readable without colours, these only help the eye.
if exists('b:current_syntax')
  finish
endif
syntax match geminiAgentHeading /^## .*/
syntax match geminiAgentThought /^┆.*/
syntax match geminiAgentTool /^\[tool\] .*/
syntax match geminiAgentWaiting /^  ? Waiting for you.*/
syntax match geminiAgentError /^\[Error\] .*/
syntax match geminiAgentNote /^\[\(Note\|Warning\)\] .*/
highlight default link geminiAgentHeading Title
highlight default link geminiAgentThought Comment
highlight default link geminiAgentTool Function
highlight default link geminiAgentWaiting WarningMsg
highlight default link geminiAgentError ErrorMsg
highlight default link geminiAgentNote Special
let b:current_syntax = 'gemini_agent'
