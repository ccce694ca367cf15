output "x" {
  value = "b"
}
