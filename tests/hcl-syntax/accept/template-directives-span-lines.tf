locals {
  l = ["a"]
  s = "%{if length(local.l) > 0 &&
  true}yes%{endif}"
  t = <<-EOT
  %{for v in length(local.l) > 0 ?
  local.l : []~}
  ${v}
  %{~endfor}
  EOT
}
