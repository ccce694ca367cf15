variable "version" {}
