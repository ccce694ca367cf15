locals {
  tenant = "a"
  name = "pre-${
    local.tenant == "a" ? "1" :
    local.tenant == "b" ? "2" : ""
  }-post"
}
